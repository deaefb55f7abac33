import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../../src/sim/framework.js';
import { videoModule as fal } from '../../../src/video/vendors/fal/index.js';
import { call, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../../helpers/video.js';

/** Vendor F through the gateway: the two-step poll keeps everything both answers said. */
let sim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  sim = await fal.simulator.start({ taskMs: 100 });
  gw = await startTestGateway(upstreamsFor([{ module: fal, sim }]));
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

describe('vendor F (fal queue) through the gateway', () => {
  it('keeps the status answer’s fields and the result’s fields in vendor_data, and sends duration in the family format', async () => {
    const { key } = await gw.newKey();
    const model = 'fal-ai/kling-video/v2.1/standard/text-to-video';
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'a kite', seconds: 10, aspect_ratio: '16:9', cfg_scale: 0.4 } });
    expect(r.status, r.text).toBe(200);
    const submit = sim.received('POST', `/${model}`).at(-1)!;
    expect(submit.headers.authorization).toMatch(/^Key /);
    expect(submit.json).toMatchObject({ prompt: 'a kite', duration: '10', aspect_ratio: '16:9', cfg_scale: 0.4 });
    const done = await pollUntilDone(gw, key, r.json.id);
    expect(done.status).toBe('completed');
    expect(done.seconds).toBe(10);
    expect(done.vendor_data.metrics).toHaveProperty('inference_time'); // from the status step
    expect(done.vendor_data).toHaveProperty('video'); // from the result step
    // Status and result were fetched at the owner/app paths the submit answer gave.
    expect(sim.received('GET', /^\/fal-ai\/kling-video\/requests\/[^/]+\/status$/).length).toBeGreaterThan(0);
  });

  it('a request for several videos holds all of them, and is billed for the videos that came back', async () => {
    const model = 'fal-ai/kling-video/v2.1/standard/text-to-video';
    const { key, account } = await gw.newKey(10);
    // Three videos of 5 s at 0.1 a second: 1.5 held.
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'three kites', seconds: 5, num_videos: 3 } });
    expect(r.status, r.text).toBe(200);
    expect(r.json.usage.held).toBe(1.5);
    expect(sim.received('POST', `/${model}`).at(-1)!.json).toMatchObject({ num_videos: 3 });
    const done = await pollUntilDone(gw, key, r.json.id);
    expect(done.status).toBe('completed');
    expect(done.usage.cost).toBe(1.5);
    expect(await gw.balance(account)).toBe(10_000_000 - 1_500_000);
    // The model made one fewer than asked: two videos are billed, the rest of the hold comes back.
    const short = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'three kites [one-short]', seconds: 5, num_videos: 3 } });
    expect(short.json.usage.held).toBe(1.5);
    const shortDone = await pollUntilDone(gw, key, short.json.id);
    expect(shortDone.usage.cost).toBe(1);
    expect(await gw.balance(account)).toBe(10_000_000 - 2_500_000);
  });

  it('a balance that covers one video but not all those asked for is a 402 before anything is sent', async () => {
    const model = 'fal-ai/kling-video/v2.1/standard/text-to-video';
    const { key, account } = await gw.newKey(1);
    const before = sim.received('POST', `/${model}`).length;
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'three kites', seconds: 5, n: 3 } });
    expect(r.status, r.text).toBe(402);
    expect(r.json.error.type).toBe('insufficient_quota');
    expect(sim.received('POST', `/${model}`).length).toBe(before);
    expect(await gw.balance(account)).toBe(1_000_000);
  });
  it('a count or a duration past any sense is a 400 naming it (not a 402), and the account is usable after it', async () => {
    const model = 'fal-ai/kling-video/v2.1/standard/text-to-video';
    const { key, account } = await gw.newKey(1);
    for (const [extra, param] of [[{ num_videos: 1e300 }, 'num_videos'], [{ duration: '9'.repeat(400) }, 'duration']] as const) {
      const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'endless kites', ...extra } });
      expect(r.status, r.text).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error', param });
    }
    const ok = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'one kite', seconds: 5 } });
    expect(ok.status, ok.text).toBe(200);
    expect((await pollUntilDone(gw, key, ok.json.id)).status).toBe('completed');
    expect(await gw.balance(account)).toBe(500_000);
  });
});
