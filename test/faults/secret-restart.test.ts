import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { samplePng } from '../../src/sim/media.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone } from '../helpers/video.js';

/**
 * The gateway restarted on the same database with other id secrets (`secret`, which seals video ids
 * and signs links). An id sealed under a secret that is gone answers the clean 404 of an unknown id,
 * never a 500; beginning a rotation (`[old]`, then `[old, new]`) keeps every id and every link handed
 * out before it working (a client's `output_url`, and the upload link a vendor has yet to fetch); and
 * finishing it (`[new]` once the old ids no longer matter) keeps every id sealed under the new secret.
 */
const OLD = 'rotation-old-secret-0123456789';
const NEW = 'rotation-new-secret-0123456789';
let sim: SimServer;
let wanSim: SimServer;
let dir: string;
let n = 0;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 20 });
  wanSim = await wan.simulator.start({ taskMs: 60_000 });
  dir = mkdtempSync(join(tmpdir(), 'gw-secret-'));
});
afterAll(async () => {
  await sim?.close();
  await wanSim?.close();
  rmSync(dir, { recursive: true, force: true });
});

function start(secret: string | string[]): Promise<TestGateway> {
  const d = sora.simulator.demo(sim);
  const w = wan.simulator.demo(wanSim);
  return startTestGateway({
    database: `sqlite:${join(dir, `gateway-${n}.db`)}`,
    // Uploads live in the data directory: the restarted gateway must find them.
    data_dir: join(dir, `data-${n}`),
    secret,
    upstreams: [
      { ...d.options, name: 'sora-sim', vendor: 'sora', base_url: sim.url, api_key: d.apiKey, models: d.models.map((m) => m.name) },
      { ...w.options, name: 'wan-sim', vendor: 'wan', base_url: wanSim.url, api_key: w.apiKey, models: w.models.map((m) => m.name) },
    ],
    models: Object.fromEntries([...d.models, ...w.models].map((m) => [m.name, { capabilities: ['video'], price: { per_second: 0.1 } }])),
  });
}

/** A completed job made on a gateway with `secret`, which is then closed. */
async function jobUnder(secret: string | string[]): Promise<{ id: string; outputUrl: string; key: string; account: string }> {
  n++;
  const gw = await start(secret);
  try {
    const { key, account } = await gw.newKey(10);
    const model = sora.simulator.demo(sim).models[0]!.name;
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'sealed', seconds: 4 } });
    expect(created.status, created.text).toBe(200);
    const job = await pollUntilDone(gw, key, created.json.id);
    expect(job.status).toBe('completed');
    return { id: job.id, outputUrl: new URL(job.output_url).pathname + new URL(job.output_url).search, key, account };
  } finally {
    await gw.close().catch(() => undefined);
  }
}

describe('restart with other id secrets', () => {
  it('an id sealed under a secret no longer configured answers 404 video_not_found, never a 500', async () => {
    const job = await jobUnder(OLD);
    const gw = await start(NEW);
    try {
      const got = await call(gw, 'GET', `/v1/videos/${job.id}`, { key: job.key });
      expect(got.status, got.text).toBe(404);
      expect(got.json.error).toMatchObject({ type: 'not_found', code: 'video_not_found' });
      const content = await call(gw, 'GET', `/v1/videos/${job.id}/content`, { key: job.key });
      expect(content.status, content.text).toBe(404);
      expect(content.json.error.type).toBe('not_found');
      const deleted = await call(gw, 'DELETE', `/v1/videos/${job.id}`, { key: job.key });
      expect(deleted.status, deleted.text).toBe(404);
      // The signed link was signed with the old secret too: a refusal in the error shape, not a 500.
      const link = await call(gw, 'GET', job.outputUrl);
      expect([401, 404], link.text).toContain(link.status);
      expect(link.json.error.type).toMatch(/authentication_error|not_found/);
    } finally {
      await gw.close();
    }
  }, 30_000);

  it('a rotation begun by adding a secret keeps the links signed before it: output_url and a pending upload link', async () => {
    const job = await jobUnder(OLD);
    // A running wan job whose first frame is an upload the vendor fetches by a signed gateway link.
    const first = await start(OLD);
    let uploadLink: string;
    let wanJob: string;
    try {
      const form = new FormData();
      form.set('model', 'wan2.6-i2v');
      form.set('prompt', 'the picture comes alive');
      form.set('input_reference', new Blob([new Uint8Array(samplePng())], { type: 'image/png' }), 'frame.png');
      const created = await fetch(`${first.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${job.key}` }, body: form });
      expect(created.status, await created.clone().text()).toBe(200);
      wanJob = ((await created.json()) as { id: string }).id;
      const sent = wanSim.lastReceived('POST', /video-synthesis$/)!.json.input.img_url as string;
      expect(sent).toMatch(/\/uploads\/.+\?expires=/);
      uploadLink = new URL(sent).pathname + new URL(sent).search;
    } finally {
      await first.close();
    }

    const gw = await start([OLD, NEW]);
    try {
      expect((await call(gw, 'GET', `/v1/videos/${job.id}`, { key: job.key })).status).toBe(200);
      // The link the client was given (valid 24 h) still plays.
      const link = await call(gw, 'GET', job.outputUrl);
      expect(link.status, link.text).toBe(200);
      expect(link.headers.get('content-type')).toMatch(/^video\//);
      // The vendor, fetching the frame after the restart, still gets it.
      const frame = await fetch(gw.url + uploadLink);
      expect(frame.status).toBe(200);
      expect(Buffer.from(await frame.arrayBuffer()).equals(samplePng())).toBe(true);
      expect((await call(gw, 'GET', `/v1/videos/${wanJob}`, { key: job.key })).json.status).not.toBe('failed');
      // Links signed now, under the new secret, work too.
      const fresh = await call(gw, 'GET', `/v1/videos/${job.id}`, { key: job.key });
      const url = new URL(fresh.json.output_url);
      expect((await call(gw, 'GET', url.pathname + url.search)).status).toBe(200);
    } finally {
      await gw.close();
    }
  }, 30_000);

  it('a rotation finished by dropping the old secret keeps the ids sealed under the new one', async () => {
    const job = await jobUnder([OLD, NEW]);
    const gw = await start([NEW]);
    try {
      const got = await call(gw, 'GET', `/v1/videos/${job.id}`, { key: job.key });
      expect(got.status, got.text).toBe(200);
      expect(got.json).toMatchObject({ id: job.id, status: 'completed' });
      expect((await call(gw, 'GET', `/v1/videos/${job.id}/content`, { key: job.key })).status).toBe(200);
      expect((await call(gw, 'GET', job.outputUrl)).status).toBe(200);
    } finally {
      await gw.close();
    }
  }, 30_000);
});
