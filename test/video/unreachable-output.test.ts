import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as veo } from '../../src/video/vendors/veo/index.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createVideo, pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * A vendor reports a job finished, but its only video is at a location the gateway's download never
 * fetches from: the job fails at settlement, its hold is released and nothing is charged (it used to
 * complete, billed, with a download that answered 502 forever). Only what is decided without a DNS
 * lookup is refused then; a host name is refused when the download connects. Over real HTTP, with the
 * production media rules (no private networks).
 */
let wanSim: SimServer;
let veoSim: SimServer;
let gw: TestGateway;
const lines: string[] = [];
const SIGNATURE = 'sig-0123456789abcdef-never-shown';

beforeAll(async () => {
  wanSim = await wan.simulator.start({ taskMs: 30 });
  veoSim = await veo.simulator.start({ taskMs: 30 });
  gw = await startTestGateway(
    {
      ...upstreamsFor([
        { module: wan, sim: wanSim },
        { module: veo, sim: veoSim },
      ]),
      log_level: 'info',
      video: { media: { allow_private_networks: false } },
    },
    { logSink: { write: (line: string) => lines.push(line) } },
  );
}, 30_000);

afterAll(async () => {
  await gw?.close();
  await Promise.all([wanSim?.close(), veoSim?.close()]);
});

beforeEach(() => {
  wanSim.clearFaults();
  veoSim.clearFaults();
  lines.length = 0;
});

/** A wan job whose poll answers SUCCEEDED with `videoUrl`; its end state, and the account's balance before and after. */
async function wanFinishingAt(videoUrl: string): Promise<{ done: any; id: string; key: string; before: number; after: number }> {
  const { key, account } = await gw.newKey(10);
  const before = await gw.balance(account);
  wanSim.inject(
    { kind: 'status', status: 200, json: { request_id: 'r-1', output: { task_id: 't-1', task_status: 'SUCCEEDED', video_url: videoUrl }, usage: { duration: 5 } } },
    1,
    /^\/api\/v1\/tasks\//,
  );
  const { created } = await createVideo(gw, key, { model: 'wan2.6-t2v', prompt: 'a red fox in snow', seconds: 5 });
  const done = await pollUntilDone(gw, key, created.json.id);
  return { done, id: created.json.id, key, before, after: await gw.balance(account) };
}

function expectFailedUncharged(r: { done: any; before: number; after: number }, why: RegExp): void {
  expect(r.done.status, JSON.stringify(r.done)).toBe('failed');
  expect(r.done.error.code).toBe('generation_failed');
  expect(r.done.error.message).toMatch(/gave a download location the gateway does not fetch from/);
  expect(r.done.error.message).toMatch(why);
  expect(r.done.error.message).toMatch(/nothing was charged/);
  expect(r.done.usage?.cost ?? 0).toBe(0);
  expect(r.after).toBe(r.before);
  // The vendor's URL is in neither the answer's message nor the log.
  expect(r.done.error.message).not.toContain(SIGNATURE);
  expect(lines.join('\n')).not.toContain(SIGNATURE);
  expect(lines.some((l) => /never fetches from/.test(JSON.parse(l).msg))).toBe(true);
}

describe('a finished video at a location no download fetches from', () => {
  it.each([
    ['a file: URL', 'file:///etc/passwd', /not an http\(s\) URL/],
    ['a javascript: URL', `javascript:alert('${SIGNATURE}')`, /not an http\(s\) URL/],
    ['a data: URL that is not inline base64', `data:text/html,<script>${SIGNATURE}</script>`, /not an http\(s\) URL/],
    ['the cloud metadata address', `http://169.254.169.254/latest/meta-data/iam/?s=${SIGNATURE}`, /private or local network address/],
    ['loopback as an IPv4-mapped IPv6 literal', `http://[::ffff:127.0.0.1]:9/x?s=${SIGNATURE}`, /private or local network address/],
    ['loopback as a decimal number', `http://2130706433:9/x?s=${SIGNATURE}`, /private or local network address/],
    ['not a URL at all', `no url ${SIGNATURE}`, /not a URL the gateway can download/],
  ])('%s: the job fails at settlement, its hold released, nothing charged', async (_what, url, why) => {
    expectFailedUncharged(await wanFinishingAt(url), why);
  });

  it('a Veo Cloud Storage location given as a metadata-address URL: the same', async () => {
    const { key, account } = await gw.newKey(10);
    const before = await gw.balance(account);
    const model = veo.simulator.demo(veoSim).models[0]!.name;
    veoSim.inject(
      {
        kind: 'status',
        status: 200,
        json: { name: 'projects/p/locations/l/operations/op', done: true, response: { videos: [{ gcsUri: `http://169.254.169.254/b/o.mp4?s=${SIGNATURE}`, mimeType: 'video/mp4' }] } },
      },
      1,
      /:fetchPredictOperation$/,
    );
    const { created } = await createVideo(gw, key, { model, prompt: 'a fox', seconds: 4 });
    const done = await pollUntilDone(gw, key, created.json.id);
    expectFailedUncharged({ done, before, after: await gw.balance(account) }, /private or local network address/);
  });

  it('a host name is only known when the download connects: the job completes, its download is refused then', async () => {
    // "localhost" resolves to loopback, which only a lookup tells: refused by the download, not at settlement.
    const r = await wanFinishingAt(`http://localhost:9/video.mp4?s=${SIGNATURE}`);
    expect(r.done.status).toBe('completed');
    expect(r.after).toBeLessThan(r.before);
    const content = await call(gw, 'GET', `/v1/videos/${r.id}/content`, { key: r.key });
    expect(content.status, content.text).toBe(502);
    expect(content.json.error.message).toMatch(/does not fetch from: it is or resolves to a private or local network address/);
  });

  it('a video on a public https URL completes and is billed as before', async () => {
    const r = await wanFinishingAt('https://dashscope-result.example.com/video.mp4?Signature=abc');
    expect(r.done.status).toBe('completed');
    expect(r.after).toBeLessThan(r.before);
  });
});
