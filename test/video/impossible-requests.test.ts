import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * Requests no model can honour are the client's mistake, a 400 naming the field, with nothing held:
 * an `aspect_ratio` that names no size the model can make (`0:0`, a word such as `wide`, a ratio with
 * no documented size) used to be dropped on the way to the vendor (the job made in the vendor's default
 * shape and billed as if asked for), and a length past any sense (`duration: 1e300`) was a 402.
 */
let sims: SimServer[];
let gw: TestGateway;
beforeAll(async () => {
  sims = [await sora.simulator.start({ taskMs: 60_000 }), await wan.simulator.start({ taskMs: 60_000 })];
  gw = await startTestGateway(upstreamsFor([{ module: sora, sim: sims[0]! }, { module: wan, sim: sims[1]! }]));
});
afterAll(async () => {
  await gw?.close();
  for (const s of sims ?? []) await s.close();
});

/** Job rows in any state, hidden ones (rejected, submitting) included. */
async function rows(): Promise<number> {
  const states = ['submitting', 'processing', 'completed', 'failed', 'rejected'];
  const n = await gw.services.store.countJobsByState(states, 1_000);
  return states.reduce((sum, s) => sum + (n[s] ?? 0), 0);
}

describe('an aspect_ratio that names no size', () => {
  it.each([
    ['sora-2', '0:0'],
    ['sora-2', '16:0'],
    ['sora-2', 'wide'],
    ['wan2.6-t2v', '0:0'],
    ['wan2.6-t2v', 'wide'],
    ['wan2.6-t2v', '21:9'],
  ])('%s with %s is a 400 on aspect_ratio, nothing held or sent', async (model, aspect_ratio) => {
    const { key, account } = await gw.newKey(100);
    const before = await gw.balance(account);
    const sent = sims.reduce((n, s) => n + s.received('POST', /./).length, 0);
    const rowsBefore = await rows();
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'a fox', aspect_ratio } });
    expect(r.status, r.text).toBe(400);
    expect(r.json.error).toMatchObject({ type: 'invalid_request_error', param: 'aspect_ratio' });
    expect(await gw.balance(account)).toBe(before);
    expect(sims.reduce((n, s) => n + s.received('POST', /./).length, 0)).toBe(sent);
    // Refused before anything was stored: no job row, not even a rejected one.
    expect(await rows()).toBe(rowsBefore);
  });

  it('a ratio the model has a size for still makes that size', async () => {
    const { key } = await gw.newKey(100);
    for (const [model, aspect_ratio] of [['sora-2', '16:9'], ['wan2.6-t2v', '9:16'], ['sora-2', 'auto']]) {
      const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'a fox', aspect_ratio } });
      expect(r.status, `${model} ${aspect_ratio}: ${r.text}`).toBe(200);
    }
    expect(sims[0]!.lastReceived('POST', /videos$/)).toBeDefined();
  });
});

describe('a length or count past any sense', () => {
  it.each([
    ['wan2.6-t2v', { duration: 1e300 }, 'duration'],
    ['wan2.6-t2v', { seconds: 1e9 }, 'seconds'],
  ])('%s with %j is a 400 naming the field, not a 402 for the balance', async (model, fields, param) => {
    const { key, account } = await gw.newKey(100);
    const before = await gw.balance(account);
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'a fox', ...fields } });
    expect(r.status, r.text).toBe(400);
    expect(r.json.error).toMatchObject({ type: 'invalid_request_error', param });
    expect(await gw.balance(account)).toBe(before);
  });
});
