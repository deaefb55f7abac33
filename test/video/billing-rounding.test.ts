import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costForSeconds, costForTokens } from '../../src/core/money.js';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * Amounts are rounded up to a whole micro so that fractions are never free, but a price times a
 * duration that is a whole number of micros in decimals must bill that number: 0.001 per second
 * for 16.1 s is 0.0161, although 1000 x 16.1 is 16100.000000000002 in binary floating point.
 */
let sim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  sim = await wan.simulator.start({ taskMs: 50 });
  const v = upstreamsFor([{ module: wan, sim }]);
  gw = await startTestGateway({ ...v, models: { ...v.models, 'wan2.6-t2v': { capabilities: ['video'], price: { per_second: 0.001 } } } });
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

describe('rounding of billed amounts', () => {
  it('a vendor-reported 16.1 s at 0.001 per second is billed 0.0161, not 0.016101', async () => {
    const { key, account } = await gw.newKey(1);
    sim.settings.reportSeconds = 16.1;
    try {
      const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'wan2.6-t2v', prompt: 'a decimal clip', duration: 17 } });
      expect(created.status, created.text).toBe(200);
      const done = await pollUntilDone(gw, key, created.json.id);
      expect(done.status).toBe('completed');
      expect(done.usage.cost).toBe(0.0161);
      expect(await gw.balance(account)).toBe(1_000_000 - 16_100);
    } finally {
      delete sim.settings.reportSeconds;
    }
  });

  it('costForSeconds bills decimal-exact products exactly and still rounds real fractions up', () => {
    expect(costForSeconds(1_000, 16.1)).toBe(16_100);
    expect(costForSeconds(3_000, 1.1)).toBe(3_300);
    expect(costForSeconds(100_000, 2.3)).toBe(230_000);
    // A true fraction of a micro is never free.
    expect(costForSeconds(1, 0.5)).toBe(1);
    expect(costForSeconds(100_000, 5.0416666)).toBe(504_167);
    expect(costForSeconds(3, 1.0000001)).toBe(4);
    expect(costForTokens(20_000, 7)).toBe(1);
    expect(costForTokens(1_000_000, 3)).toBe(3);
  });
});
