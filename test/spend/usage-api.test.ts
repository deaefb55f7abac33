import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { embeddingModule as openai } from '../../src/embeddings/vendors/openai/index.js';
import { main } from '../../src/main.js';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * GET /v1/usage for the calling key (never another key's spend), the admin report grouped by day,
 * model or key with CSV export, and the same report from the CLI.
 */
const EMBED = 'text-embedding-3-small';
let videoSim: SimServer;
let embedSim: SimServer;
let gw: TestGateway;
let limited: string;
let limitedId: string;
let sibling: string;
let siblingId: string;
const admin = () => ({ authorization: `Bearer ${gw.adminToken}` });

beforeAll(async () => {
  videoSim = await sora.simulator.start({ taskMs: 50 });
  embedSim = await openai.simulator.start({});
  const v = upstreamsFor([{ module: sora, sim: videoSim }]);
  const d = openai.simulator.demo(embedSim);
  gw = await startTestGateway({
    upstreams: [...v.upstreams, { ...d.options, name: 'oai', vendor: 'openai', base_url: embedSim.url, api_key: d.apiKey, models: [EMBED] }],
    models: { ...v.models, [EMBED]: { capabilities: ['embedding'], price: { per_million_input_tokens: 300_000 } } },
  });
  await gw.createAccount('usage-acme', { balance: 100 });
  await gw.createAccount('usage-other', { balance: 100 });
  const a = await gw.services.admin.createKey({ account: 'usage-acme', name: 'limited', budget: { total: 5, period: 'day', period_limit: 2 } });
  const b = await gw.services.admin.createKey({ account: 'usage-acme', name: 'sibling' });
  [limited, limitedId, sibling, siblingId] = [a.key, a.record.id, b.key, b.record.id];
  for (let i = 0; i < 2; i++) expect((await call(gw, 'POST', '/v1/embeddings', { key: limited, body: { model: EMBED, input: 'one two three' } })).status).toBe(200);
  const created = await call(gw, 'POST', '/v1/videos/generations', { key: sibling, body: { model: 'sora-2', prompt: 'usage', seconds: 4 } });
  await pollUntilDone(gw, sibling, created.json.id);
  const other = await gw.createKey('usage-other');
  expect((await call(gw, 'POST', '/v1/embeddings', { key: other, body: { model: EMBED, input: 'one two three' } })).status).toBe(200);
});
afterAll(async () => {
  await gw?.close();
  await videoSim?.close();
  await embedSim?.close();
});

describe('GET /v1/usage', () => {
  it("answers the calling key's budget, spend, remaining and spend by model", async () => {
    const r = await call(gw, 'GET', '/v1/usage', { key: limited });
    expect(r.status, r.text).toBe(200);
    expect(r.json.object).toBe('key_usage');
    expect(r.json.data).toMatchObject({
      key: { id: limitedId, name: 'limited' },
      balance: 100 - 1.8 - 0.4,
      limit: 5,
      usage: 1.8,
      // The day's cap binds: 2 - 1.8.
      limit_remaining: 0.2,
      limit_reset: 'daily',
      period: { period: 'day', limit: 2, usage: 1.8 },
      by_model: [{ model: EMBED, cost: 1.8, requests: 2 }],
    });
    expect((await call(gw, 'GET', '/v1/key', { key: limited })).json).toEqual(r.json);
  });

  it("a key without a budget sees its own spend only, never its sibling's", async () => {
    const r = await call(gw, 'GET', '/v1/usage', { key: sibling });
    expect(r.json.data).toMatchObject({ limit: null, limit_remaining: null, limit_reset: null, period: null, usage: 0.4 });
    expect(r.json.data.by_model).toEqual([{ model: 'sora-2', cost: 0.4, requests: 1 }]);
  });

  it('a date range outside the spend is empty; bad dates are 400s; no key is 401', async () => {
    const r = await call(gw, 'GET', '/v1/usage?from=2020-01-01&to=2020-01-31', { key: limited });
    expect(r.status).toBe(200);
    expect(r.json.data.by_model).toEqual([]);
    for (const q of ['from=yesterday', 'from=2026-02-30x', 'from=2026-03-01&to=2026-02-01', 'from=2000-01-01&to=2026-01-01']) {
      const bad = await call(gw, 'GET', `/v1/usage?${q}`, { key: limited });
      expect(bad.status, q).toBe(400);
      expect(bad.json.error.type).toBe('invalid_request_error');
    }
    expect((await call(gw, 'GET', '/v1/usage')).status).toBe(401);
  });
});

describe('GET /admin/usage', () => {
  it('groups by key, model and day, filtered by account', async () => {
    const byKey = await call(gw, 'GET', '/admin/usage?account=usage-acme&group_by=key', { headers: admin() });
    expect(byKey.status, byKey.text).toBe(200);
    expect(byKey.json.data).toEqual([
      { key: limitedId, cost: 1.8, cost_micros: 1_800_000, requests: 2 },
      { key: siblingId, cost: 0.4, cost_micros: 400_000, requests: 1 },
    ]);
    const byModel = await call(gw, 'GET', '/admin/usage?group_by=model', { headers: admin() });
    expect(byModel.json.data).toEqual([
      { model: EMBED, cost: 2.7, cost_micros: 2_700_000, requests: 3 },
      { model: 'sora-2', cost: 0.4, cost_micros: 400_000, requests: 1 },
    ]);
    const byDay = await call(gw, 'GET', `/admin/usage?group_by=day&account=usage-acme&model=${EMBED}`, { headers: admin() });
    expect(byDay.json.data).toEqual([{ day: new Date().toISOString().slice(0, 10), cost: 1.8, cost_micros: 1_800_000, requests: 2 }]);
  });

  it('exports CSV by format=csv or Accept: text/csv', async () => {
    const res = await fetch(`${gw.url}/admin/usage?account=usage-acme&group_by=key&format=csv`, { headers: admin() });
    expect(res.headers.get('content-type')).toContain('text/csv');
    expect(await res.text()).toBe(`key,cost,cost_micros,requests\n${limitedId},1.800000,1800000,2\n${siblingId},0.400000,400000,1\n`);
    const viaAccept = await fetch(`${gw.url}/admin/usage?group_by=model`, { headers: { ...admin(), accept: 'text/csv' } });
    expect((await viaAccept.text()).split('\n')[0]).toBe('model,cost,cost_micros,requests');
  });

  it('refuses bad filters in the error shape, and anyone without the admin token', async () => {
    expect((await call(gw, 'GET', '/admin/usage?group_by=week', { headers: admin() })).json.error.param).toBe('group_by');
    expect((await call(gw, 'GET', '/admin/usage?account=nobody', { headers: admin() })).status).toBe(404);
    expect((await call(gw, 'GET', '/admin/usage?key=nokey', { headers: admin() })).status).toBe(404);
    expect((await call(gw, 'GET', '/admin/usage', { key: limited })).status).toBe(401);
  });
});

describe('gateway usage / gateway budget (CLI)', () => {
  async function cli(...argv: string[]) {
    let out = '';
    const o = vi.spyOn(process.stdout, 'write').mockImplementation((c) => ((out += String(c)), true));
    const e = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      return { code: await main(argv), out };
    } finally {
      o.mockRestore();
      e.mockRestore();
    }
  }

  it('prints the same report as the admin API, as JSON or CSV, and sets a budget', async () => {
    const cfg = join(gw.dataDir, 'cli.yaml');
    writeFileSync(cfg, `database: sqlite:${join(gw.dataDir, 'gateway.db')}\ndata_dir: ${gw.dataDir}\n`);
    const json = await cli('usage', '--account', 'usage-acme', '--group-by', 'key', '--config', cfg);
    expect(json.code).toBe(0);
    const api = await call(gw, 'GET', '/admin/usage?account=usage-acme&group_by=key', { headers: admin() });
    expect(JSON.parse(json.out).data).toEqual(api.json.data);
    const csv = await cli('usage', '--group-by', 'model', '--csv', '--config', cfg);
    expect(csv.out.split('\n')[1]).toBe(`${EMBED},2.700000,2700000,3`);
    const set = await cli('budget', siblingId, '--total', '0.4', '--config', cfg);
    expect(set.code).toBe(0);
    expect(JSON.parse(set.out).budget).toEqual({ total: '0.400000', period: null, period_limit: null });
    expect((await cli('budget', siblingId, '--period', 'week', '--period-limit', '1', '--config', cfg)).code).not.toBe(0);
    expect((await cli('usage', '--group-by', 'hour', '--config', cfg)).code).not.toBe(0);
  });
});
