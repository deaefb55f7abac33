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
});
