import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { formatMicros, MAX_MICROS } from '../../src/core/money.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * The largest balance the ledger holds (MAX_MICROS) counts the money video jobs hold: a hold goes
 * back to the balance when its job fails, so a top-up that fits the balance alone but not with the
 * holds would take the balance past what can be read back.
 */
let sim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 100 });
  gw = await startTestGateway({ ...upstreamsFor([{ module: sora, sim }]), limits: { defaults: { video: { rpm: 10_000 } } } });
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

const admin = (method: string, path: string, body?: unknown) => call(gw, method, path, { body, headers: { authorization: `Bearer ${gw.adminToken}` } });

describe('the balance ceiling with video holds open', () => {
  it('a top-up that the held money coming back would take past the ceiling is a 400; the account stays readable', async () => {
    const { key, account } = await gw.newKey(1);
    // A failing job holds 0.8 while it runs: 0.2 is left in the balance.
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'held [fail]', seconds: 8 } });
    expect(created.status, created.text).toBe(200);
    // Up to the ceiling with the hold counted is fine ...
    const fits = await admin('POST', `/admin/accounts/${account}/topup`, { amount: formatMicros(MAX_MICROS - 1_000_000) });
    expect(fits.status, fits.text).toBe(200);
    // ... one micro more is not: it would be past the ceiling once the 0.8 is released.
    const over = await admin('POST', `/admin/accounts/${account}/topup`, { amount: '0.000001' });
    expect(over.status, over.text).toBe(400);
    expect(over.json.error).toMatchObject({ type: 'invalid_request_error', param: 'amount' });
    expect(over.json.error.message).toMatch(/held/);
    expect((await pollUntilDone(gw, key, created.json.id)).status).toBe('failed');
    const read = await admin('GET', `/admin/accounts/${account}`);
    expect(read.status, read.text).toBe(200);
    expect(read.json.balance_micros).toBe(MAX_MICROS);
    expect((await call(gw, 'GET', '/v1/models', { key })).status).toBe(200);
  });
});
