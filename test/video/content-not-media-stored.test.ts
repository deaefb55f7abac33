import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4 } from '../../src/sim/media.js';
import { videoModule as veo } from '../../src/video/vendors/veo/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * A vendor that returns the video inline (Veo's `bytesBase64Encoded`) has it kept in the gateway's
 * blob store, and served from there. What it returned is the vendor's answer all the same: bytes
 * that are not a video (an HTML page with a secret in it) must not be served as the video, whether
 * the whole file or a range far into it is asked for; a real stored video and its ranges still are.
 */
const SECRET = 'vendor-side-secret-0123456789';
const PAGE = Buffer.from(`<html><body>${SECRET}${' '.repeat(2000)}</body></html>`);

let sim: SimServer;
let gw: TestGateway;
const lines: string[] = [];

beforeAll(async () => {
  sim = await veo.simulator.start({ taskMs: 30 });
  gw = await startTestGateway({ ...upstreamsFor([{ module: veo, sim }]), log_level: 'info' }, { logSink: { write: (line: string) => lines.push(line) } });
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

/** A finished Veo job whose operation carries `bytes` inline. */
async function jobReturning(bytes: Buffer): Promise<{ key: string; id: string; account: string }> {
  const { key, account } = await gw.newKey(10);
  const model = veo.simulator.demo(sim).models[0]!.name;
  const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'a fox', seconds: 4 } });
  expect(created.status, created.text).toBe(200);
  sim.inject(
    {
      kind: 'status',
      status: 200,
      json: { name: 'projects/p/locations/us-central1/publishers/google/models/m/operations/op-1', done: true, response: { videos: [{ bytesBase64Encoded: bytes.toString('base64'), mimeType: 'video/mp4' }] } },
    },
    // Every poll: a job that cannot settle on this answer would otherwise settle on the simulator's own.
    1_000,
    /:fetchPredictOperation$/,
  );
  const done = await pollUntilDone(gw, key, created.json.id, 5_000).finally(() => sim.clearFaults());
  expect(done.status).toBe('completed');
  return { key, id: created.json.id, account };
}

async function get(id: string, key: string, range?: string): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const res = await fetch(`${gw.url}/v1/videos/${id}/content`, { headers: { authorization: `Bearer ${key}`, connection: 'close', ...(range ? { range } : {}) } });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

describe("the gateway's stored copy of an inline video", () => {
  it('a real MP4 is served whole and by range; an HTML page stored in its place is refused for every range, and stays billed', async () => {
    const real = await jobReturning(sampleMp4());
    const all = await get(real.id, real.key);
    expect(all.status).toBe(200);
    expect(all.bytes.equals(sampleMp4())).toBe(true);
    const slice = await get(real.id, real.key, 'bytes=1000-1999');
    expect(slice.status).toBe(206);
    expect(slice.bytes.equals(sampleMp4().subarray(1000, 2000))).toBe(true);

    const hostile = await jobReturning(PAGE);
    const billed = await gw.balance(hostile.account);
    expect(billed).toBe(10_000_000 - 400_000);
    lines.length = 0;
    for (const range of [undefined, 'bytes=0-', 'bytes=5-', 'bytes=12-1999']) {
      const r = await get(hostile.id, hostile.key, range);
      expect(r.status, range).toBe(502);
      const text = r.bytes.toString();
      expect(JSON.parse(text).error.code).toBe('upstream_error');
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain('html');
    }
    expect(lines.filter((l) => l.includes('not the media asked for'))).toHaveLength(4);
    for (const l of lines) expect(l).not.toContain(SECRET);
    expect(await gw.balance(hostile.account)).toBe(billed);
  });
});
