import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddingModule as openai } from '../../src/embeddings/vendors/openai/index.js';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';
import { PG_URL } from '../store/harness.js';

/**
 * Per-key budgets: refused at the exact edge with key_budget_exceeded while a sibling key of the
 * same account goes on; concurrent requests never overspend, on SQLite and on PostgreSQL with two
 * instances; every ledger row says which key, model and upstream caused it.
 */
const EMBED_MODEL = 'text-embedding-3-small';
let videoSim: SimServer;
let embedSim: SimServer;

function config(extra: Record<string, unknown> = {}) {
  const v = upstreamsFor([{ module: sora, sim: videoSim }]);
  const d = openai.simulator.demo(embedSim);
  return {
    upstreams: [...v.upstreams, { ...d.options, name: 'oai', vendor: 'openai', base_url: embedSim.url, api_key: d.apiKey, models: [EMBED_MODEL] }],
    // 3 tokens ("one two three") x 0.3 per token = 0.9 per request; a video second costs 0.1.
    models: { ...v.models, [EMBED_MODEL]: { capabilities: ['embedding'], price: { per_million_input_tokens: 300_000 } } },
    limits: { defaults: { video: { rpm: 10_000 }, embeddings: { rpm: 100_000, tpm: 10_000_000 } } },
    ...extra,
  };
}

async function accountWithKeys(gw: TestGateway, balance: number, budget: Record<string, unknown>) {
  const account = `budget-${randomBytes(4).toString('hex')}`;
  await gw.createAccount(account, { balance });
  const limited = await gw.services.admin.createKey({ account, budget: budget as never });
  const sibling = await gw.services.admin.createKey({ account });
  return { account, limited: limited.key, limitedId: limited.record.id, sibling: sibling.key };
}

const video = (gw: TestGateway, key: string, prompt = 'a budgeted clip') =>
  call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt, seconds: 8 } });
const embed = (gw: TestGateway, key: string) => call(gw, 'POST', '/v1/embeddings', { key, body: { model: EMBED_MODEL, input: 'one two three' } });

beforeAll(async () => {
  videoSim = await sora.simulator.start({ taskMs: 100 });
  embedSim = await openai.simulator.start({});
});
afterAll(async () => {
  await videoSim?.close();
  await embedSim?.close();
});

describe('key budgets on SQLite', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(config());
  });
  afterAll(async () => gw?.close());

  it('video: refused at the exact edge of the total cap, before any upstream call; the sibling key is not', async () => {
    // Two 8 s holds of 0.8 fit 1.6 exactly; the third does not.
    const { limited, sibling } = await accountWithKeys(gw, 100, { total: '1.6' });
    expect((await video(gw, limited)).status).toBe(200);
    expect((await video(gw, limited)).status).toBe(200);
    const before = videoSim.requests.length;
    const refused = await video(gw, limited);
    expect(refused.status).toBe(402);
    expect(refused.json.error).toMatchObject({ type: 'insufficient_quota', code: 'key_budget_exceeded' });
    expect(videoSim.requests.length).toBe(before);
    expect((await video(gw, sibling)).status).toBe(200);
  });

  it('video: one micro short of the edge refuses the second job', async () => {
    const { limited } = await accountWithKeys(gw, 100, { total: '1.599999' });
    expect((await video(gw, limited)).status).toBe(200);
    expect((await video(gw, limited)).status).toBe(402);
  });

  it('video: a settled job counts what it cost, not what it held; a failed job gives its hold back', async () => {
    const { account, limited, limitedId } = await accountWithKeys(gw, 100, { period: 'day', period_limit: 0.8 });
    const created = await video(gw, limited);
    expect(created.status).toBe(200);
    expect((await video(gw, limited)).json.error.code).toBe('key_budget_exceeded');
    const done = await pollUntilDone(gw, limited, created.json.id);
    expect(done.status).toBe('completed');
    const spend = await gw.services.store.keySpend(limitedId, Date.now());
    expect(spend.period).toBe(800_000);
    expect(await gw.balance(account)).toBe(100_000_000 - 800_000);
  });

  it('embeddings: refused at the exact edge while the sibling key goes on', async () => {
    const { limited, sibling } = await accountWithKeys(gw, 100, { total: 1.8 });
    expect((await embed(gw, limited)).status).toBe(200);
    expect((await embed(gw, limited)).status).toBe(200);
    const before = embedSim.requests.length;
    const refused = await embed(gw, limited);
    expect(refused.status).toBe(402);
    expect(refused.json.error).toMatchObject({ type: 'insufficient_quota', code: 'key_budget_exceeded' });
    expect(embedSim.requests.length).toBe(before);
    expect((await embed(gw, sibling)).status).toBe(200);
  });

  it('50 concurrent embeddings never overspend a budget of 10 requests', async () => {
    const { account, limited, limitedId } = await accountWithKeys(gw, 1000, { total: 9 });
    embedSim.latencyMs = 50;
    const results = await Promise.all(Array.from({ length: 50 }, () => embed(gw, limited)));
    embedSim.latencyMs = 0;
    const ok = results.filter((r) => r.status === 200).length;
    expect(ok).toBe(10);
    for (const r of results) if (r.status !== 200) expect(r.json.error.code).toBe('key_budget_exceeded');
    await gw.services.charges.drain(); // acknowledged before written (billing/charges.ts)
    const accountId = (await gw.services.store.getAccountByName(account))!.id;
    const charges = (await gw.services.store.listLedger(accountId, { limit: 1000 })).filter((e) => e.kind === 'charge');
    expect(charges.reduce((s, e) => s - e.delta, 0)).toBe(9_000_000);
    expect((await gw.services.store.keySpend(limitedId, Date.now())).total).toBe(9_000_000);
  });

  it('a new cap or another kind of budget keeps counting the requests in flight; a budget removed and set again restarts from the ledger', async () => {
    const { KeyBudgets } = await import('../../src/billing/key-budgets.js');
    const store = gw.services.store;
    const { limitedId } = await accountWithKeys(gw, 100, { total: '1' });
    const key = (await store.getKey(limitedId))!;
    const budgets = new KeyBudgets(store, () => Date.now());
    // A request in flight has 0.9 counted when the admin sets the cap again (the same, or raised).
    const settleA = await budgets.reserve(key, 900_000);
    await store.setKeyBudget(limitedId, { total: 1_000_000, period: null, periodLimit: null });
    await expect(budgets.reserve(key, 900_000)).rejects.toMatchObject({ status: 402 });
    await store.setKeyBudget(limitedId, { total: 2_000_000, period: null, periodLimit: null });
    const settleB = await budgets.reserve(key, 900_000);
    await settleA(900_000);
    await settleB(900_000);
    expect((await store.keySpend(limitedId, Date.now())).total).toBe(1_800_000);
    // A budget of another kind (a daily limit added) keeps the counters as well.
    await store.setKeyBudget(limitedId, { total: 2_000_000, period: 'day', periodLimit: 1_000_000 });
    expect(await store.keySpend(limitedId, Date.now())).toMatchObject({ total: 1_800_000, period: 1_800_000 });
    // A key whose budget was removed counts nothing meanwhile: a budget set again starts from the ledger,
    // where these reservations never wrote a charge.
    await store.setKeyBudget(limitedId, null);
    await store.setKeyBudget(limitedId, { total: 2_000_000, period: null, periodLimit: null });
    expect((await store.keySpend(limitedId, Date.now())).total).toBe(0);
  });

  it('a budget changed to another kind while requests run still counts them (a day to a month, a period to a total)', async () => {
    const { KeyBudgets } = await import('../../src/billing/key-budgets.js');
    const store = gw.services.store;
    const { account, limitedId } = await accountWithKeys(gw, 100, { period: 'day', period_limit: '5' });
    const accountId = (await store.getAccountByName(account))!.id;
    const key = (await store.getKey(limitedId))!;
    const budgets = new KeyBudgets(store, () => Date.now());
    const by = { keyId: limitedId, model: EMBED_MODEL, upstream: 'oai' };
    // 1.0 is counted for a request still running when the daily limit becomes a monthly one of 1.5.
    const settleA = await budgets.reserve(key, 1_000_000);
    await store.setKeyBudget(limitedId, { total: null, period: 'month', periodLimit: 1_500_000 });
    await expect(budgets.reserve(key, 600_000)).rejects.toMatchObject({ status: 402 });
    const settleB = await budgets.reserve(key, 500_000);
    // Each is charged (the ledger row first, then the estimate corrected, as the services do).
    await store.charge(accountId, 800_000, 'emb-kind-a', EMBED_MODEL, Date.now(), by);
    await settleA(800_000);
    await store.charge(accountId, 500_000, 'emb-kind-b', EMBED_MODEL, Date.now(), by);
    await settleB(500_000);
    expect((await store.keySpend(limitedId, Date.now())).period).toBe(1_300_000);
    // The monthly limit becomes a lifetime total while a third request runs.
    const settleC = await budgets.reserve(key, 100_000);
    await store.setKeyBudget(limitedId, { total: 1_500_000, period: null, periodLimit: null });
    await expect(budgets.reserve(key, 100_001)).rejects.toMatchObject({ status: 402 });
    await store.charge(accountId, 100_000, 'emb-kind-c', EMBED_MODEL, Date.now(), by);
    await settleC(100_000);
    expect((await store.keySpend(limitedId, Date.now())).total).toBe(1_400_000);
    await expect(budgets.reserve(key, 100_001)).rejects.toMatchObject({ status: 402 });
    expect(await budgets.reserve(key, 100_000)).toBeTypeOf('function');
  });

  it('ledger rows carry the key, model and upstream that caused them', async () => {
    const { account, limited, limitedId } = await accountWithKeys(gw, 100, { total: 50 });
    const created = await video(gw, limited);
    await pollUntilDone(gw, limited, created.json.id);
    expect((await embed(gw, limited)).status).toBe(200);
    await gw.services.charges.drain(); // acknowledged before written (billing/charges.ts)
    const accountId = (await gw.services.store.getAccountByName(account))!.id;
    const entries = await gw.services.store.listLedger(accountId);
    const byKind = Object.fromEntries(entries.filter((e) => e.kind !== 'credit').map((e) => [e.kind, e]));
    expect(Object.keys(byKind).sort()).toEqual(['capture', 'charge', 'hold', 'release']);
    for (const e of Object.values(byKind)) expect(e.keyId).toBe(limitedId);
    expect(byKind.capture).toMatchObject({ model: 'sora-2', upstream: 'sora-up' });
    expect(byKind.release).toMatchObject({ model: 'sora-2', upstream: 'sora-up' });
    expect(byKind.hold).toMatchObject({ model: 'sora-2' });
    expect(byKind.charge).toMatchObject({ model: EMBED_MODEL, upstream: 'oai' });
    // And the admin ledger view shows them.
    const r = await call(gw, 'GET', `/admin/accounts/${account}/ledger`, { headers: { authorization: `Bearer ${gw.adminToken}` } });
    expect(r.json.data[0]).toMatchObject({ key_id: limitedId });
  });

  it('admin API sets, shows and clears a budget; bad budgets are 400s that change nothing', async () => {
    const { limitedId } = await accountWithKeys(gw, 10, { total: 1 });
    const admin = { authorization: `Bearer ${gw.adminToken}` };
    const set = await call(gw, 'PUT', `/admin/keys/${limitedId}/budget`, { headers: admin, body: { budget: { period: 'month', period_limit: '2.5' } } });
    expect(set.status, set.text).toBe(200);
    expect(set.json.budget).toEqual({ total: null, period: 'month', period_limit: '2.500000' });
    for (const bad of [{ period: 'week', period_limit: 1 }, { period: 'day' }, { total: -1 }, { total: 'lots' }, {}]) {
      const r = await call(gw, 'PUT', `/admin/keys/${limitedId}/budget`, { headers: admin, body: { budget: bad } });
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.json.error.type).toBe('invalid_request_error');
    }
    expect((await gw.services.store.getKey(limitedId))!.budget).toEqual({ total: null, period: 'month', periodLimit: 2_500_000 });
    const cleared = await call(gw, 'PUT', `/admin/keys/${limitedId}/budget`, { headers: admin, body: { budget: null } });
    expect(cleared.json.budget).toBeNull();
    expect((await call(gw, 'PUT', '/admin/keys/nope/budget', { headers: admin, body: { budget: null } })).status).toBe(404);
  });
});

describe('key budgets on PostgreSQL with two instances', () => {
  const schema = `gw_budget_${randomBytes(4).toString('hex')}`;
  let a: TestGateway;
  let b: TestGateway;
  beforeAll(async () => {
    const shared = config({ database: `${PG_URL}?schema=${schema}` });
    a = await startTestGateway(shared);
    b = await startTestGateway(shared);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  });

  it('50 concurrent video creates across both instances hold exactly what the budget allows', async () => {
    // 10 holds of 0.8 fit 8.0; the sibling key keeps working afterwards.
    const { account, limited, limitedId, sibling } = await accountWithKeys(a, 1000, { total: 8 });
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => video(i % 2 ? a : b, limited, `clip ${i}`)));
    const ok = results.filter((r) => r.status === 200).length;
    expect(ok).toBe(10);
    for (const r of results) if (r.status !== 200) expect(r.json.error.code).toBe('key_budget_exceeded');
    const accountId = (await a.services.store.getAccountByName(account))!.id;
    const holds = (await b.services.store.listLedger(accountId, { limit: 1000 })).filter((e) => e.kind === 'hold');
    expect(holds).toHaveLength(10);
    expect((await a.services.store.keySpend(limitedId, Date.now())).total).toBe(8_000_000);
    expect((await video(b, sibling)).status).toBe(200);
  });

  it('50 concurrent embeddings across both instances never overspend', async () => {
    const { account, limited } = await accountWithKeys(a, 1000, { period: 'day', period_limit: 4.5 });
    embedSim.latencyMs = 30;
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => embed(i % 2 ? a : b, limited)));
    embedSim.latencyMs = 0;
    expect(results.filter((r) => r.status === 200)).toHaveLength(5);
    // Charges are acknowledged before they are written; the ledger holds them once drained.
    await Promise.all([a.services.charges.drain(), b.services.charges.drain()]);
    const accountId = (await a.services.store.getAccountByName(account))!.id;
    const charged = (await a.services.store.listLedger(accountId, { limit: 1000 })).filter((e) => e.kind === 'charge').reduce((s, e) => s - e.delta, 0);
    expect(charged).toBe(4_500_000);
  });
});
