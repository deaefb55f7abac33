import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { costForTokens, toMicros } from '../../../src/core/money.js';
import { embeddingModule as openai } from '../../../src/embeddings/vendors/openai/index.js';
import { simTokens, simVector } from '../../../src/sim/vectors.js';
import type { SimServer } from '../../../src/sim/framework.js';
import { asFloat32, post, startHarness, type Harness } from '../../embeddings/harness.js';

const MODEL = 'text-embedding-3-small';
const PRICE = 0.02;

function expected(input: string | number[], dims = 1536): Float32Array {
  return simVector(MODEL, input, 1536, dims);
}

describe('embeddings through an OpenAI-compatible upstream', () => {
  let sim: SimServer;
  let h: Harness;
  let key: string;

  beforeAll(async () => {
    sim = await openai.simulator.start();
    h = await startHarness([{ module: openai, sim }]);
    ({ key } = await h.newKey(100));
  });
  afterAll(async () => {
    await h.close();
    await sim.close();
  });
  beforeEach(() => {
    sim.reset();
    for (const k of Object.keys(sim.settings)) if (k !== 'apiKey') delete sim.settings[k];
  });

  it('serves the official SDK with its defaults (base64 asked) and the vectors equal the upstream float32 values', async () => {
    const client = new OpenAI({ apiKey: key, baseURL: `${h.url}/v1`, maxRetries: 0 });
    const inputs = ['The quick brown fox', 'jumped over the lazy dog', 'third'];
    const res = await client.embeddings.create({ model: MODEL, input: inputs });
    expect(res.model).toBe(MODEL);
    expect(res.data.map((d) => d.index)).toEqual([0, 1, 2]);
    res.data.forEach((d, i) => {
      expect(d.embedding).toHaveLength(1536);
      expect(Float32Array.from(d.embedding)).toEqual(expected(inputs[i]!));
    });
    const sent = sim.lastReceived('POST', '/v1/embeddings')!;
    expect(sent.json.encoding_format).toBe('base64');
    expect(sent.headers['authorization']).toBe('Bearer sk-sim-openai');
    const tokens = inputs.reduce((s, t) => s + simTokens(t), 0);
    expect(res.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens, cost: expect.any(Number) });
  });

  it("serves the SDK with encoding_format 'float' as JSON floats", async () => {
    const client = new OpenAI({ apiKey: key, baseURL: `${h.url}/v1`, maxRetries: 0 });
    const res = await client.embeddings.create({ model: MODEL, input: 'hello there', encoding_format: 'float' });
    expect(Array.isArray(res.data[0]!.embedding)).toBe(true);
    expect(Float32Array.from(res.data[0]!.embedding)).toEqual(expected('hello there'));
    expect(sim.lastReceived('POST', '/v1/embeddings')!.json.encoding_format).toBe('float');
  });

  it('converts to base64 when the upstream only speaks floats (supports_base64: false)', async () => {
    const s2 = await openai.simulator.start();
    s2.settings['ignoreEncodingFormat'] = true;
    const h2 = await startHarness([{ module: openai, sim: s2, options: { supports_base64: false } }]);
    try {
      const { key: k2 } = await h2.newKey(10);
      const client = new OpenAI({ apiKey: k2, baseURL: `${h2.url}/v1`, maxRetries: 0 });
      const res = await client.embeddings.create({ model: MODEL, input: ['alpha', 'beta'] });
      expect(s2.lastReceived('POST', '/v1/embeddings')!.json.encoding_format).toBe('float');
      expect(Float32Array.from(res.data[1]!.embedding)).toEqual(expected('beta'));
    } finally {
      await h2.close();
      await s2.close();
    }
  });

  it('still answers base64 when an upstream silently ignores encoding_format', async () => {
    sim.settings['ignoreEncodingFormat'] = true;
    const r = await post(h, key, { model: MODEL, input: ['one', 'two'], encoding_format: 'base64' });
    expect(r.status).toBe(200);
    expect(typeof r.json.data[0].embedding).toBe('string');
    expect(asFloat32(r.json.data[0].embedding)).toEqual(expected('one'));
    expect(asFloat32(r.json.data[1].embedding)).toEqual(expected('two'));
  });

  it('passes dimensions, user and extra_body on, and accepts token-array inputs', async () => {
    const r = await post(h, key, {
      model: MODEL,
      input: [[9906, 1917], [15339]],
      dimensions: 256,
      user: 'end-user-7',
      extra_body: { vendor_flag: true },
    });
    expect(r.status).toBe(200);
    const sent = sim.lastReceived('POST', '/v1/embeddings')!.json;
    expect(sent).toMatchObject({ dimensions: 256, user: 'end-user-7', vendor_flag: true, input: [[9906, 1917], [15339]] });
    expect(asFloat32(r.json.data[0].embedding)).toEqual(expected([9906, 1917], 256));
    expect(r.json.usage.prompt_tokens).toBe(3);
  });

  it('answers with the public model name even when the upstream echoes another', async () => {
    sim.settings['modelEcho'] = 'text-embedding-3-small-2024-deployment';
    for (const encoding_format of ['float', 'base64']) {
      const r = await post(h, key, { model: MODEL, input: 'x', encoding_format });
      expect(r.status).toBe(200);
      expect(r.json.model).toBe(MODEL);
      expect(r.json.object).toBe('list');
    }
  });

  it('bills the tokens the upstream reported, not the estimate, and writes one charge', async () => {
    sim.settings['extraTokensPerInput'] = 7;
    const { key: k, accountId: acct } = await h.newKey(5);
    const before = await h.balance(acct);
    const inputs = ['billing check one', 'billing check two'];
    const r = await post(h, k, { model: MODEL, input: inputs });
    expect(r.status).toBe(200);
    const reported = inputs.reduce((s, t) => s + simTokens(t) + 7, 0);
    expect(r.json.usage.prompt_tokens).toBe(reported);
    const cost = costForTokens(toMicros(PRICE), reported);
    expect(before - (await h.balance(acct))).toBe(cost);
    const ledger = await h.store.listLedger(acct);
    const charges = ledger.filter((e) => e.kind === 'charge');
    expect(charges).toHaveLength(1);
    expect(charges[0]).toMatchObject({ delta: -cost, note: MODEL });
    expect(r.headers.get('x-request-id')).toBe(charges[0]!.ref);
  });

  it('answers 402 before any upstream call when the balance cannot cover the estimate', async () => {
    const { key: poor, accountId: acct } = await h.newKey(0);
    const r = await post(h, poor, { model: MODEL, input: 'a fairly long text to make the estimate non-zero' });
    expect(r.status).toBe(402);
    expect(r.json.error.type).toBe('insufficient_quota');
    expect(sim.requests).toHaveLength(0);
    expect(await h.balance(acct)).toBe(0);
  });

  it('maps an upstream 400 to a 400 for the client without charging', async () => {
    const { key: k, accountId: acct } = await h.newKey(1);
    const r = await post(h, k, { model: 'text-embedding-3-small', input: 'x', dimensions: 99999 });
    expect(r.status).toBe(400);
    expect(r.json.error.type).toBe('invalid_request_error');
    expect(r.json.error.param).toBe('dimensions');
    expect(await h.balance(acct)).toBe(toMicros(1));
  });

  it('keeps x-ratelimit headers on success', async () => {
    const r = await post(h, key, { model: MODEL, input: 'hdr' });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-ratelimit-limit-requests')).toBeTruthy();
    expect(r.headers.get('x-ratelimit-remaining-tokens')).toBeTruthy();
  });

  it('leaves the account untouched when the only upstream fails', async () => {
    const { key: k, accountId: acct } = await h.newKey(3);
    sim.inject({ kind: 'status', status: 503 }, 1);
    const r = await post(h, k, { model: MODEL, input: 'x' });
    expect(r.status).toBe(502);
    expect(r.json.error.type).toBe('server_error');
    expect((await h.store.listLedger(acct)).filter((e) => e.kind === 'charge')).toHaveLength(0);
    expect(await h.balance(acct)).toBe(toMicros(3));
  });

  it('an answer forwarded as it came must still hold one non-empty vector per input, all of one size: else 502, nothing charged', async () => {
    const { key: k, accountId: acct } = await h.newKey(3);
    const answer = (embeddings: unknown[]) => ({
      object: 'list',
      data: embeddings.map((embedding, index) => ({ object: 'embedding', index, embedding })),
      model: MODEL,
      usage: { prompt_tokens: 5, total_tokens: 5 },
    });
    const b64 = (n: number) => Buffer.from(new Float32Array(n).buffer).toString('base64');
    const cases: [string, unknown[], number][] = [
      ['float', [[]], 1],
      ['base64', [''], 1],
      ['float', [[], []], 2],
      ['base64', ['', ''], 2],
      // Fewer vectors than inputs, each sound.
      ['float', [[0.1, 0.2]], 2],
      ['base64', [b64(2)], 3],
      // Base64 vectors of different sizes.
      ['base64', [b64(2), b64(3)], 2],
      // Float vectors of different sizes.
      ['float', [Array.from({ length: 1536 }, (_, i) => i / 1e4), [0.1, 0.2, 0.3]], 2],
      ['float', [[0.1, 0.2], [0.1, 0.2], [0.1]], 3],
    ];
    for (const [encoding_format, embeddings, inputs] of cases) {
      sim.inject({ kind: 'status', status: 200, json: answer(embeddings) });
      const r = await post(h, k, { model: MODEL, input: Array.from({ length: inputs }, (_, i) => `text ${i}`), encoding_format });
      expect(r.status, `${encoding_format} vectors of sizes ${embeddings.map((e) => (e as unknown[] | string).length).join(', ')}: ${JSON.stringify(r.json).slice(0, 300)}`).toBe(502);
      expect(r.json.error).toMatchObject({ type: 'server_error', code: 'upstream_error' });
    }
    expect((await h.store.listLedger(acct)).filter((e) => e.kind === 'charge')).toHaveLength(0);
    expect(await h.balance(acct)).toBe(toMicros(3));
  });
});

describe('the OpenAI simulator', () => {
  it('lists models and routes chat completions to the chat simulator', async () => {
    const sim = await openai.simulator.start();
    try {
      const auth = { authorization: 'Bearer sk-sim-openai', 'content-type': 'application/json' };
      const models = await (await fetch(`${sim.url}/v1/models`, { headers: auth })).json();
      expect(models.data.map((m: { id: string }) => m.id)).toEqual(expect.arrayContaining([MODEL, 'gpt-4o-mini']));
      const chat = await fetch(`${sim.url}/v1/chat/completions`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(chat.status).toBe(200);
      expect((await chat.json()).choices[0].message.role).toBe('assistant');
      const denied = await fetch(`${sim.url}/v1/embeddings`, { method: 'POST', headers: { ...auth, authorization: 'Bearer nope' }, body: '{}' });
      expect(denied.status).toBe(401);
    } finally {
      await sim.close();
    }
  });
});

describe('Azure OpenAI deployments', () => {
  it('uses the deployment path, api-version and the api-key header', async () => {
    const sim = await openai.simulator.start();
    sim.settings['deployments'] = { 'emb-small-prod': MODEL };
    const h = await startHarness([
      { module: openai, sim, options: { api_version: '2024-10-21' }, modelMap: { [MODEL]: 'emb-small-prod' } },
    ]);
    try {
      const { key } = await h.newKey(10);
      const client = new OpenAI({ apiKey: key, baseURL: `${h.url}/v1`, maxRetries: 0 });
      const res = await client.embeddings.create({ model: MODEL, input: 'azure text' });
      expect(Float32Array.from(res.data[0]!.embedding)).toEqual(expected('azure text'));
      expect(res.model).toBe(MODEL);
      const got = sim.lastReceived('POST', '/openai/deployments/emb-small-prod/embeddings')!;
      expect(got.query.get('api-version')).toBe('2024-10-21');
      expect(got.headers['api-key']).toBe('sk-sim-openai');
      expect(got.headers['authorization']).toBeUndefined();
      expect(got.json.model).toBeUndefined();
    } finally {
      await h.close();
      await sim.close();
    }
  });
});
