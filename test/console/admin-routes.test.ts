import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/** The admin routes the console is built on, and the job list filters, called as a script would. */
let sim: SimServer;
let gw: TestGateway;
const admin = (method: string, path: string, body?: unknown) => call(gw, method, path, { key: gw.adminToken, body });

let a: { key: string; account: string };
let b: { key: string; account: string };
const ids: { a: string[]; b: string[] } = { a: [], b: [] };

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 50 });
  gw = await startTestGateway(upstreamsFor([{ module: sora, sim, name: 'sora-main' }]));
  a = await gw.newKey(100);
  b = await gw.newKey(100);
  for (const [who, n] of [[a, 3], [b, 2]] as const) {
    for (let i = 0; i < n; i++) {
      const r = await call(gw, 'POST', '/v1/videos/generations', { key: who.key, body: { model: i === 0 ? 'sora-2-pro' : 'sora-2', prompt: `clip ${i}` } });
      expect(r.status, r.text).toBe(200);
      (who === a ? ids.a : ids.b).push(r.json.id);
    }
  }
  // Settle all but the last of each account.
  for (const id of ids.a.slice(0, -1)) await pollUntilDone(gw, a.key, id);
  for (const id of ids.b.slice(0, -1)) await pollUntilDone(gw, b.key, id);
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

describe('GET /admin/jobs', () => {
  it("lists every account's jobs newest first, in cursor pages that neither skip nor repeat", async () => {
    const seen: string[] = [];
    let after: string | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const r = await admin('GET', `/admin/jobs?limit=2${after ? `&after=${after}` : ''}`);
      expect(r.status, r.text).toBe(200);
      seen.push(...r.json.data.map((j: any) => j.id));
      if (!r.json.has_more) break;
      after = r.json.last_id;
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...ids.b].reverse().concat([...ids.a].reverse()));
  });

  it('filters by account, status, model and creation date; refuses bad filters with 400', async () => {
    const byAccount = await admin('GET', `/admin/jobs?account=${a.account}`);
    expect(byAccount.json.data.map((j: any) => j.id).sort()).toEqual([...ids.a].sort());
    expect(byAccount.json.data.every((j: any) => j.account_id && j.upstream === 'sora-main')).toBe(true);
    const completed = await admin('GET', `/admin/jobs?account=${a.account}&status=completed`);
    expect(completed.json.data.map((j: any) => j.id).sort()).toEqual(ids.a.slice(0, -1).sort());
    const pro = await admin('GET', '/admin/jobs?model=sora-2-pro');
    expect(pro.json.data.map((j: any) => j.id).sort()).toEqual([ids.a[0], ids.b[0]].sort());
    const today = new Date().toISOString().slice(0, 10);
    expect((await admin('GET', `/admin/jobs?from=${today}&to=${today}`)).json.data).toHaveLength(5);
    expect((await admin('GET', '/admin/jobs?to=2000-01-01')).json.data).toHaveLength(0);
    for (const [q, param] of [['status=done', 'status'], ['from=yesterday', 'from'], ['limit=0', 'limit'], ['after=nonsense', 'after'], ['from=2026-02-02&to=2026-02-01', 'to']]) {
      const r = await admin('GET', `/admin/jobs?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.json.error.param, q).toBe(param);
    }
    expect((await admin('GET', '/admin/jobs?account=nobody')).status).toBe(404);
    expect((await call(gw, 'GET', '/admin/jobs', { key: a.key })).status).toBe(401);
  });

  it('GET /admin/jobs/{id}: any account\'s job with cost, upstream and a signed output_url that plays without a key', async () => {
    const r = await admin('GET', `/admin/jobs/${ids.b[0]}`);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ id: ids.b[0], status: 'completed', upstream: 'sora-main', model: 'sora-2-pro' });
    expect(Number(r.json.cost)).toBeGreaterThan(0);
    const video = await fetch(r.json.output_url, { headers: { range: 'bytes=0-99' } });
    expect(video.status).toBe(206);
    expect(Buffer.from(await video.arrayBuffer()).subarray(4, 8).toString('latin1')).toBe('ftyp');
    expect((await admin('GET', '/admin/jobs/garbage')).status).toBe(404);
  });
});

describe('GET /v1/videos filters', () => {
  it("narrow the key holder's own list by status and model, and never show another account's jobs", async () => {
    const all = await call(gw, 'GET', '/v1/videos?limit=100', { key: a.key });
    expect(all.json.data.map((j: any) => j.id).sort()).toEqual([...ids.a].sort());
    const pro = await call(gw, 'GET', '/v1/videos?model=sora-2-pro', { key: a.key });
    expect(pro.json.data.map((j: any) => j.id)).toEqual([ids.a[0]]);
    const done = await call(gw, 'GET', '/v1/videos?status=completed', { key: b.key });
    expect(done.json.data.map((j: any) => j.id)).toEqual([ids.b[0]]);
    const bad = await call(gw, 'GET', '/v1/videos?status=nope', { key: a.key });
    expect(bad.status).toBe(400);
    expect(bad.json.error.param).toBe('status');
  });
});

describe('PATCH /admin/accounts/{name}', () => {
  it('changes upstreams and limits, refuses unknown upstreams and fields, and the change applies to the next request', async () => {
    const c = await gw.newKey(10);
    const r = await admin('PATCH', `/admin/accounts/${c.account}`, { upstreams: [], limits: { video: { rpm: 7 } } });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ upstreams: [], limits: { video: { rpm: 7 } } });
    const refused = await call(gw, 'POST', '/v1/videos/generations', { key: c.key, body: { model: 'sora-2', prompt: 'x' } });
    expect(refused.status).toBe(403);
    expect((await admin('PATCH', `/admin/accounts/${c.account}`, { upstreams: null })).json.upstreams).toBe('all');
    expect((await call(gw, 'POST', '/v1/videos/generations', { key: c.key, body: { model: 'sora-2', prompt: 'x' } })).status).toBe(200);
    const unknown = await admin('PATCH', `/admin/accounts/${c.account}`, { upstreams: ['nope'] });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.param).toBe('upstreams');
    expect((await admin('PATCH', `/admin/accounts/${c.account}`, { balance: 5 })).json.error.param).toBe('balance');
    expect((await admin('PATCH', '/admin/accounts/nobody', {})).status).toBe(404);
  });
});

describe('GET /admin/accounts/{name}/ledger filters', () => {
  it('narrow by kind and model, and page by entry id', async () => {
    const all = (await admin('GET', `/admin/accounts/${a.account}/ledger`)).json.data;
    const holds = (await admin('GET', `/admin/accounts/${a.account}/ledger?kind=hold`)).json.data;
    expect(holds.length).toBe(3);
    expect(holds.every((e: any) => e.kind === 'hold')).toBe(true);
    const pro = (await admin('GET', `/admin/accounts/${a.account}/ledger?model=sora-2-pro`)).json.data;
    expect(pro.length).toBeGreaterThan(0);
    expect(pro.every((e: any) => e.model === 'sora-2-pro')).toBe(true);
    const page1 = (await admin('GET', `/admin/accounts/${a.account}/ledger?limit=2`)).json.data;
    const page2 = (await admin('GET', `/admin/accounts/${a.account}/ledger?limit=100&before=${page1[1].id}`)).json.data;
    expect([...page1, ...page2].map((e: any) => e.id)).toEqual(all.map((e: any) => e.id));
    expect((await admin('GET', `/admin/accounts/${a.account}/ledger?to=2000-01-01`)).json.data).toEqual([]);
    for (const q of ['kind=gift', 'before=-1', 'from=soon'])
      expect((await admin('GET', `/admin/accounts/${a.account}/ledger?${q}`)).status, q).toBe(400);
  });
});

describe('GET /admin/upstreams', () => {
  it('shows each upstream with its circuit, calls by outcome and latency of this instance', async () => {
    const r = await admin('GET', '/admin/upstreams');
    expect(r.status).toBe(200);
    const up = r.json.data.find((u: any) => u.name === 'sora-main');
    expect(up).toMatchObject({ vendor: 'sora', circuit: 'closed', consecutive_failures: 0 });
    expect(up.calls['2xx']).toBeGreaterThanOrEqual(5);
    expect(up.latency_ms.samples).toBeGreaterThan(0);
    expect(up.latency_ms.p95).toBeGreaterThanOrEqual(up.latency_ms.p50);
    expect(JSON.stringify(r.json)).not.toContain(sim.url);
  });
});
