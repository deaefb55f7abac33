import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddingModule as openaiEmbeddings } from '../../src/embeddings/vendors/openai/index.js';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModules } from '../../src/video/vendors/registry.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * `usage.cost` (currency units) on every answer: a video job shows what it holds while processing
 * and exactly what the ledger captured once settled, for every vendor; embeddings show their charge
 * and still parse with the official SDK.
 */
const sims = new Map<string, SimServer>();
let embedSim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  for (const m of videoModules) sims.set(m.vendor.id, await m.simulator.start({ taskMs: 150 }));
  embedSim = await openaiEmbeddings.simulator.start({});
  const v = upstreamsFor(videoModules.map((module) => ({ module, sim: sims.get(module.vendor.id)! })));
  const d = openaiEmbeddings.simulator.demo(embedSim);
  gw = await startTestGateway({
    upstreams: [...v.upstreams, { ...d.options, name: 'oai', vendor: 'openai', base_url: embedSim.url, api_key: d.apiKey, models: ['text-embedding-3-small'] }],
    models: { ...v.models, 'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 123_457 } } },
  });
});
afterAll(async () => {
  await gw?.close();
  await embedSim?.close();
  await Promise.all([...sims.values()].map((s) => s.close()));
});

const modelOf = (id: string) => videoModules.find((m) => m.vendor.id === id)!.simulator.demo(sims.get(id)!).models[0]!.name;

describe.each(videoModules.map((m) => [m.vendor.id]))('usage.cost for video vendor %s', (vendorId) => {
  it('shows the hold while processing and equals the ledger capture once completed', async () => {
    const { key, account } = await gw.newKey(100);
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: modelOf(vendorId), prompt: 'a lighthouse at dusk' } });
    expect(created.status, created.text).toBe(200);
    const accountId = (await gw.services.store.getAccountByName(account))!.id;
    const hold = (await gw.services.store.listLedger(accountId)).find((e) => e.kind === 'hold')!;
    expect(created.json.usage).toEqual({ held: -hold.delta / 1e6 });

    const done = await pollUntilDone(gw, key, created.json.id);
    expect(done.status).toBe('completed');
    const capture = (await gw.services.store.listLedger(accountId)).filter((e) => e.kind === 'capture');
    expect(capture).toHaveLength(1);
    expect(done.usage.cost).toBe(-capture[0]!.delta / 1e6);
    expect(done.usage.cost).toBeGreaterThan(0);
  });
});

describe('usage.cost on other answers', () => {
  it('a failed video job costs 0 and says so', async () => {
    const { key } = await gw.newKey(100);
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: modelOf('sora'), prompt: 'please [fail]' } });
    const done = await pollUntilDone(gw, key, created.json.id);
    expect(done.status).toBe('failed');
    expect(done.usage).toEqual({ cost: 0 });
  });

  it('embeddings carry usage.cost equal to the charge, and the openai SDK still parses them (floats and base64)', async () => {
    const { key, account } = await gw.newKey(100);
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1` });
    for (const encoding_format of ['float', 'base64'] as const) {
      const r = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input: 'one two three', encoding_format } });
      expect(r.status).toBe(200);
      await gw.services.charges.drain(); // acknowledged before written (billing/charges.ts)
      const accountId = (await gw.services.store.getAccountByName(account))!.id;
      const charge = (await gw.services.store.listLedger(accountId)).find((e) => e.kind === 'charge')!;
      expect(r.json.usage.cost).toBe(-charge.delta / 1e6);
      expect(r.json.usage.prompt_tokens).toBe(3);
      expect(r.json.usage.total_tokens).toBe(3);
      const sdk = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'one two three', encoding_format });
      expect(sdk.data[0]!.embedding.length).toBeGreaterThan(0);
      expect((sdk.usage as unknown as { cost: number }).cost).toBe(r.json.usage.cost);
    }
  });

  it('an embeddings charge is one ledger row: the cost, the model as note and attribution, the key and upstream, a time-ordered ref', async () => {
    const { key, account } = await gw.newKey(100);
    const accountId = (await gw.services.store.getAccountByName(account))!.id;
    const keyId = (await gw.services.store.listKeys(accountId, { limit: 1, order: 'asc' }))[0]!.id;
    const before = Date.now();
    const r = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input: 'one two three' } });
    expect(r.status).toBe(200);
    await gw.services.charges.drain();
    const rows = (await gw.services.store.listLedger(accountId)).filter((e) => e.kind === 'charge');
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row).toMatchObject({ accountId, kind: 'charge', delta: -Math.round(r.json.usage.cost * 1e6), note: 'text-embedding-3-small', keyId, model: 'text-embedding-3-small', upstream: 'oai' });
    // 3 tokens at 123,457 units per million.
    expect(row.delta).toBe(-370_371);
    // emb-<UUID version 7>: its first 48 bits are the charge's time (core/time-ordered-id.ts).
    expect(row.ref).toMatch(/^emb-[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(row.ref.slice(4, 12) + row.ref.slice(13, 17), 16)).toBe(row.createdAt);
    expect(row.createdAt).toBeGreaterThanOrEqual(before);
  });
});
