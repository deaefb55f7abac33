import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costForTokens, toMicros } from '../../src/core/money.js';
import { embeddingModules } from '../../src/embeddings/vendors/registry.js';
import { simTokens, simVector } from '../../src/sim/vectors.js';
import { vertexSimVector } from '../../src/embeddings/vendors/vertex/simulator.js';
import type { SimServer } from '../../src/sim/framework.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/** The whole gateway (auth, authorizer, limiter, SQLite ledger) in front of every embeddings simulator. */
describe('POST /v1/embeddings end to end', () => {
  const sims: SimServer[] = [];
  let gw: TestGateway;

  beforeAll(async () => {
    const upstreams: Record<string, unknown>[] = [];
    const models: Record<string, unknown> = {
      'sora-2': { capabilities: ['video'], price: { per_second: 0.1 } },
    };
    for (const m of embeddingModules) {
      const sim = await m.simulator.start();
      sims.push(sim);
      const d = m.simulator.demo(sim);
      for (const model of d.models) {
        models[model.name] = {
          capabilities: model.capabilities,
          price: { per_million_input_tokens: model.pricePerMillionInput, per_million_output_tokens: model.pricePerMillionOutput },
        };
      }
      upstreams.push({ ...d.options, name: `${m.id}-sim`, vendor: m.id, base_url: sim.url, api_key: d.apiKey, models: d.models.map((x) => x.name), timeout_ms: 5_000 });
    }
    gw = await startTestGateway({ upstreams, models });
  });
  afterAll(async () => {
    await gw?.close();
    for (const s of sims) await s.close();
  });

  it('serves the official SDK (default base64) and bills the reported tokens', async () => {
    const { key, account } = await gw.newKey(10);
    const before = await gw.balance(account);
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const inputs = ['end to end one', 'end to end two'];
    const res = await client.embeddings.create({ model: 'text-embedding-3-small', input: inputs });
    res.data.forEach((d, i) => expect(Float32Array.from(d.embedding)).toEqual(simVector('text-embedding-3-small', inputs[i]!, 1536)));
    const tokens = inputs.reduce((s, t) => s + simTokens(t), 0);
    expect(res.usage.prompt_tokens).toBe(tokens);
    expect(before - (await gw.balance(account))).toBe(costForTokens(toMicros(0.02), tokens));
  });

  it('routes Vertex models with task_type and title', async () => {
    const { key } = await gw.newKey(10);
    const r = await call(gw, 'POST', '/v1/embeddings', {
      key,
      body: { model: 'text-embedding-005', input: 'doc', task_type: 'RETRIEVAL_DOCUMENT', title: 'Doc', encoding_format: 'float' },
    });
    expect(r.status).toBe(200);
    expect(Float32Array.from(r.json.data[0].embedding)).toEqual(vertexSimVector('text-embedding-005', 'doc', 'RETRIEVAL_DOCUMENT', 'Doc'));
  });

  it('answers with the spec error shapes', async () => {
    const { key } = await gw.newKey(10);
    expect((await call(gw, 'POST', '/v1/embeddings', { body: { model: 'text-embedding-3-small', input: 'x' } })).status).toBe(401);
    const unknown = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'no-such-model', input: 'x' } });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.code).toBe('model_not_found');
    const video = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'sora-2', input: 'x' } });
    expect(video.status).toBe(400);
    expect(video.json.error.param).toBe('model');
    const chatOnly = await gw.createKey((await gw.newKey(1)).account, { actions: ['chat'] });
    expect((await call(gw, 'POST', '/v1/embeddings', { key: chatOnly, body: { model: 'text-embedding-3-small', input: 'x' } })).status).toBe(403);
    const bad = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input: ['ok', ''] } });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({ type: 'invalid_request_error', param: 'input' });
    const poor = await gw.newKey(0);
    expect((await call(gw, 'POST', '/v1/embeddings', { key: poor.key, body: { model: 'text-embedding-3-small', input: 'x' } })).status).toBe(402);
  });

  it('answers 429 with Retry-After from the embeddings limiter', async () => {
    const { key } = await gw.newKey(10, { limits: { embeddings: { rpm: 1 } } });
    expect((await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input: 'x' } })).status).toBe(200);
    const r = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input: 'x' } });
    expect(r.status).toBe(429);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});
