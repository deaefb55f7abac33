import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import type { SqlStore } from '../../src/store/index.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { TcpRelay } from '../helpers/tcp-relay.js';
import { balanceOf, ledgerSum, postgresBackend } from '../store/harness.js';

/**
 * PostgreSQL that stops answering without closing its connections (a partition, a dead host): each
 * statement on a stalled connection gives up after the query timeout (the database URL's
 * `query_timeout_ms`, 30 s by default) with 503 store_unavailable, and its connection is dropped,
 * so the pool's connections are not held until TCP gives up, minutes later. New connections work,
 * and money stays whole: the refused create leaves no job and no hold.
 */
const backend = postgresBackend();
const relay = new TcpRelay(5432);
let direct: SqlStore;
let gw: TestGateway;
let sim: SimServer;
let key: string;
let accountId: string;
let model: string;

beforeAll(async () => {
  const fresh = await backend.fresh();
  direct = fresh.store;
  await relay.start();
  const url = new URL(fresh.url);
  url.hostname = '127.0.0.1';
  url.port = String(relay.port);
  url.searchParams.set('query_timeout_ms', '2000');
  url.searchParams.set('connect_timeout_ms', '2000');
  sim = await sora.simulator.start({ taskMs: 60_000 });
  const d = sora.simulator.demo(sim);
  model = d.models[0]!.name;
  gw = await startTestGateway({
    database: url.toString(),
    upstreams: [{ ...d.options, name: 'sora-sim', vendor: 'sora', base_url: sim.url, api_key: d.apiKey, models: d.models.map((m) => m.name) }],
    models: Object.fromEntries(d.models.map((m) => [m.name, { capabilities: ['video'], price: { per_second: 0.1 } }])),
  });
  const made = await gw.newKey(100);
  key = made.key;
  accountId = (await direct.getAccountByName(made.account))!.id;
}, 30_000);

afterAll(async () => {
  relay.resume();
  await gw?.close();
  await relay.stop();
  await sim?.close();
  await backend.dispose();
});

describe('PostgreSQL stalls with its connections open', () => {
  it('a request on a stalled connection answers 503 store_unavailable after the query timeout; fresh connections serve the next ones', async () => {
    const before = await balanceOf(direct, accountId);
    const jobsBefore = Number((await direct.driver.query('SELECT COUNT(*) AS n FROM jobs'))[0]!.n);
    const admin = { authorization: `Bearer ${gw.adminToken}` };
    // Every connection the gateway holds is open now; then none of them gets an answer.
    expect((await call(gw, 'GET', '/admin/accounts', { headers: admin })).status).toBe(200);
    relay.stall();
    const started = Date.now();
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'during the stall', seconds: 4 } });
    const waited = Date.now() - started;
    expect(r.status, r.text).toBe(503);
    expect(r.json.error).toMatchObject({ type: 'server_error', code: 'store_unavailable' });
    expect(r.text).not.toMatch(/timeout|127\.0\.0\.1/i);
    // Bounded by one query timeout, not by TCP's minutes: the stalled connection is dropped, not
    // rolled back over (a ROLLBACK would queue behind the stalled statement and time out in turn).
    expect(waited).toBeGreaterThanOrEqual(1_900);
    expect(waited).toBeLessThan(3_800);

    // The stalled connections were dropped: connections made now are relayed as usual.
    let again = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'after the stall', seconds: 4 } });
    for (let i = 0; i < 5 && again.status === 503; i++)
      again = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'after the stall', seconds: 4 } });
    expect(again.status, again.text).toBe(200);
    expect(Number((await direct.driver.query('SELECT COUNT(*) AS n FROM jobs'))[0]!.n)).toBe(jobsBefore + 1);
    const after = await balanceOf(direct, accountId);
    expect(after).toBe(before - 400_000);
    expect(await ledgerSum(direct, accountId)).toBe(after);
  }, 40_000);
});
