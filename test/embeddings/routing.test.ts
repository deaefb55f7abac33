import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { countTokens as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { toMicros } from '../../src/core/money.js';
import { embeddingModule as openai } from '../../src/embeddings/vendors/openai/index.js';
import { simTokens, simVector } from '../../src/sim/vectors.js';
import type { SimServer } from '../../src/sim/framework.js';
import { asFloat32, post, startHarness, type Harness } from './harness.js';

const MODEL = 'text-embedding-3-small';
const expected = (t: string) => simVector(MODEL, t, 1536);

describe('batch splitting', () => {
  let sim: SimServer;
  let h: Harness;
  let key: string;

  beforeAll(async () => {
    sim = await openai.simulator.start();
    // The upstream refuses more than 3 inputs per call; the gateway must split to fit.
    sim.settings['maxBatch'] = 3;
    h = await startHarness([{ module: openai, sim, options: { max_batch: 3, concurrency: 2 } }]);
    ({ key } = await h.newKey(100));
  });
  afterAll(async () => {
    await h.close();
    await sim.close();
  });
  afterEach(() => {
    sim.requests.length = 0;
    delete sim.settings['shuffle'];
  });

  it('keeps every vector at its input position across several upstream calls', async () => {
    const inputs = Array.from({ length: 10 }, (_, i) => `document number ${i}`);
    for (const encoding_format of ['float', 'base64']) {
      sim.requests.length = 0;
      const r = await post(h, key, { model: MODEL, input: inputs, encoding_format });
      expect(r.status).toBe(200);
      const calls = sim.received('POST', '/v1/embeddings');
      // Calls run two at a time, so they may arrive in any order.
      expect(calls.map((c) => c.json.input.length).sort()).toEqual([1, 3, 3, 3]);
      expect(r.json.data.map((d: any) => d.index)).toEqual(inputs.map((_, i) => i));
      r.json.data.forEach((d: any, i: number) => expect(asFloat32(d.embedding)).toEqual(expected(inputs[i]!)));
      // Usage adds up over the calls.
      expect(r.json.usage.prompt_tokens).toBe(inputs.reduce((s, t) => s + simTokens(t), 0));
    }
  });

  it('reorders an upstream answer that came back out of order', async () => {
    sim.settings['shuffle'] = true;
    const inputs = ['first', 'second', 'third', 'fourth', 'fifth'];
    const r = await post(h, key, { model: MODEL, input: inputs });
    expect(r.status).toBe(200);
    r.json.data.forEach((d: any, i: number) => {
      expect(d.index).toBe(i);
      expect(asFloat32(d.embedding)).toEqual(expected(inputs[i]!));
    });
  });

  it('forwards the upstream bytes untouched when one call serves the request', async () => {
    const ctx = await h.context(key);
    const model = h.catalog.model(MODEL)!;
    const one = await h.service.create(ctx, model, { model: MODEL, input: ['a', 'b'], encoding_format: 'base64' });
    expect(one.forwarded).toBe(true);
    const split = await h.service.create(ctx, model, { model: MODEL, input: ['a', 'b', 'c', 'd'], encoding_format: 'base64' });
    expect(split.forwarded).toBe(false);
    expect(JSON.parse(String(split.body)).data[1].embedding).toBe(JSON.parse(String(one.body)).data[1].embedding);
  });

  it('fails the whole request when one of the calls fails, and charges nothing', async () => {
    const { key: k, accountId } = await h.newKey(2);
    const before = await h.balance(accountId);
    sim.inject({ kind: 'status', status: 400, json: { error: { message: 'bad input somewhere', type: 'invalid_request_error', param: 'input', code: null } } }, 1);
    const r = await post(h, k, { model: MODEL, input: ['a', 'b', 'c', 'd', 'e', 'f', 'g'] });
    expect(r.status).toBe(400);
    expect(r.json.error.message).toContain('bad input somewhere');
    expect(await h.balance(accountId)).toBe(before);
  });
});

describe('failover', () => {
  let primary: SimServer;
  let backup: SimServer;
  let h: Harness;
  let key: string;

  beforeAll(async () => {
    primary = await openai.simulator.start();
    backup = await openai.simulator.start();
    h = await startHarness([
      { module: openai, sim: primary, name: 'primary', priority: 1, timeoutMs: 400 },
      { module: openai, sim: backup, name: 'backup', priority: 2, timeoutMs: 400 },
    ]);
    ({ key } = await h.newKey(100));
  });
  afterAll(async () => {
    await h.close();
    await primary.close();
    await backup.close();
  });
  afterEach(() => {
    primary.reset();
    backup.reset();
    // Each test starts with closed circuits; the failures of one must not reorder the next.
    h.catalog.circuits.success('primary');
    h.catalog.circuits.success('backup');
  });

  it('moves to the next upstream on a 500', async () => {
    primary.inject({ kind: 'status', status: 500 }, 1);
    const r = await post(h, key, { model: MODEL, input: 'failover please' });
    expect(r.status).toBe(200);
    expect(asFloat32(r.json.data[0].embedding)).toEqual(expected('failover please'));
    expect(primary.requests).toHaveLength(1);
    expect(backup.requests).toHaveLength(1);
  });

  it('moves to the next upstream on a timeout', async () => {
    primary.inject({ kind: 'timeout' }, 1);
    const started = Date.now();
    const r = await post(h, key, { model: MODEL, input: 'slow primary' });
    expect(r.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    expect(backup.requests).toHaveLength(1);
  });

  it('moves on after an upstream 429 and a connection reset', async () => {
    primary.inject({ kind: 'status', status: 429, headers: { 'retry-after': '3' } }, 1);
    expect((await post(h, key, { model: MODEL, input: 'x' })).status).toBe(200);
    primary.inject({ kind: 'reset' }, 1);
    expect((await post(h, key, { model: MODEL, input: 'y' })).status).toBe(200);
    expect(backup.requests).toHaveLength(2);
  });

  it('moves on when the primary answers 200 with a broken body', async () => {
    primary.inject({ kind: 'malformed' }, 1);
    const r = await post(h, key, { model: MODEL, input: 'z' });
    expect(r.status).toBe(200);
    expect(backup.requests).toHaveLength(1);
  });

  it('does not fail over on a client error', async () => {
    primary.inject({ kind: 'status', status: 400, json: { error: { message: 'Invalid input', type: 'invalid_request_error', param: 'input', code: null } } }, 1);
    const r = await post(h, key, { model: MODEL, input: 'x' });
    expect(r.status).toBe(400);
    expect(r.json.error.param).toBe('input');
    expect(backup.requests).toHaveLength(0);
  });

  it('passes on at most a minute of Retry-After when every upstream answers 429 (years ahead, or unreadable)', async () => {
    primary.inject({ kind: 'status', status: 429, headers: { 'retry-after': '999999999' } }, 1);
    backup.inject({ kind: 'status', status: 429, headers: { 'retry-after': 'Fri, 01 Jan 2100 00:00:00 GMT' } }, 1);
    const r1 = await post(h, key, { model: MODEL, input: 'x' });
    expect([r1.status, r1.headers.get('retry-after')]).toEqual([502, '60']);
    primary.inject({ kind: 'status', status: 429, headers: { 'retry-after': '0x10' } }, 1);
    backup.inject({ kind: 'status', status: 429, headers: { 'retry-after': '1e9' } }, 1);
    const r2 = await post(h, key, { model: MODEL, input: 'x' });
    expect([r2.status, r2.headers.get('retry-after')]).toEqual([502, null]);
  });

  it('answers 502 when every upstream errors and 504 when every upstream times out', async () => {
    primary.inject({ kind: 'status', status: 500 }, 1);
    backup.inject({ kind: 'status', status: 503 }, 1);
    const r1 = await post(h, key, { model: MODEL, input: 'x' });
    expect(r1.status).toBe(502);
    expect(r1.json.error.type).toBe('server_error');
    primary.inject({ kind: 'timeout' }, 1);
    backup.inject({ kind: 'timeout' }, 1);
    const r2 = await post(h, key, { model: MODEL, input: 'x' });
    expect(r2.status).toBe(504);
  });

  it('treats wrong upstream credentials as that upstream failing, not as the client fault', async () => {
    const h2 = await startHarness([
      { module: openai, sim: primary, name: 'bad-key', priority: 1 },
      { module: openai, sim: backup, name: 'good', priority: 2 },
    ]);
    try {
      const { key: k } = await h2.newKey(1);
      primary.inject({ kind: 'status', status: 401, json: { error: { message: 'Incorrect API key provided: sk-sim-***', type: 'invalid_request_error', code: 'invalid_api_key' } } }, 1);
      const r = await post(h2, k, { model: MODEL, input: 'x' });
      expect(r.status).toBe(200);
      expect(r.text).not.toContain('sk-sim');
    } finally {
      await h2.close();
    }
  });
});

describe('client disconnect', () => {
  it('cancels the upstream call and charges nothing', async () => {
    const sim = await openai.simulator.start();
    const h = await startHarness([{ module: openai, sim }]);
    try {
      const { key, accountId } = await h.newKey(1);
      sim.latencyMs = 1_500;
      const ac = new AbortController();
      const pending = fetch(`${h.url}/v1/embeddings`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, input: 'never mind' }),
        signal: ac.signal,
      }).catch((e: Error) => e);
      // The client leaves once the call is at the upstream (which holds it 1.5 s).
      for (const end = Date.now() + 5_000; sim.requests.length === 0 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 5));
      expect(sim.requests).toHaveLength(1);
      ac.abort();
      expect(await pending).toBeInstanceOf(Error);
      // Long enough for the upstream to have answered had the call not been cancelled.
      await new Promise((r) => setTimeout(r, 1_800));
      expect((await h.store.listLedger(accountId)).filter((e) => e.kind === 'charge')).toHaveLength(0);
    } finally {
      await h.close();
      await sim.close();
    }
  });
});

describe('the embeddings rate limiter', () => {
  let sim: SimServer;
  let h: Harness;

  beforeAll(async () => {
    sim = await openai.simulator.start();
    h = await startHarness([{ module: openai, sim }], { defaults: { rpm: 2, tpm: 1000 } });
  });
  afterAll(async () => {
    await h.close();
    await sim.close();
  });

  it('answers 429 with Retry-After once the requests per minute are spent', async () => {
    const { key } = await h.newKey(10);
    expect((await post(h, key, { model: MODEL, input: 'a' })).status).toBe(200);
    expect((await post(h, key, { model: MODEL, input: 'b' })).status).toBe(200);
    const before = sim.requests.length;
    const r = await post(h, key, { model: MODEL, input: 'c' });
    expect(r.status).toBe(429);
    expect(r.json.error.type).toBe('rate_limit_error');
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(r.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect(sim.requests.length).toBe(before);
  });

  it('counts tokens with a real tokenizer against tokens per minute', async () => {
    const { key } = await h.newKey(10);
    // ~1200 tokens of text: more than the whole 1000-token minute.
    const big = Array.from({ length: 600 }, (_, i) => `w${i}`).join(' ');
    const r = await post(h, key, { model: MODEL, input: big });
    // No amount of waiting lets it through, so it is a 400, not a 429 to retry forever.
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('request_too_large');
    expect(sim.requests.filter((q) => q.json?.input?.[0] === big)).toHaveLength(0);

    // ~600 tokens fit once; the second such request in the same minute gets a 429 with Retry-After.
    const half = Array.from({ length: 300 }, (_, i) => `w${i}`).join(' ');
    const first = await post(h, key, { model: MODEL, input: half });
    expect(first.status).toBe(200);
    const second = await post(h, key, { model: MODEL, input: half });
    expect(second.status).toBe(429);
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(second.json.error.type).toBe('rate_limit_error');
  });

  it('does not admit text built to tokenize badly as a fraction of its size', async () => {
    const { key, accountId } = await h.newKey(10);
    // 400 different emoji: about 1,100 cl100k tokens in 800 UTF-16 units, more than the 1000-token minute.
    const emoji = Array.from({ length: 400 }, (_, i) => String.fromCodePoint(0x1f300 + i)).join('');
    expect(cl100k(emoji, { disallowedSpecial: new Set() })).toBeGreaterThan(1000);
    const r = await post(h, key, { model: MODEL, input: emoji });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('request_too_large');
    expect(sim.requests.filter((q) => q.json?.input?.[0] === emoji)).toHaveLength(0);
    expect(await h.balance(accountId)).toBe(toMicros(10));
  });

  it('counts exactly before refusing a request as too large: an estimate far too high does not decide it', async () => {
    const { key } = await h.newKey(10);
    // One letter 1,500 times: estimated a token a character (over the 1000-token minute), 188 counted.
    const repeated = 'x'.repeat(1_500);
    expect(cl100k(repeated, { disallowedSpecial: new Set() })).toBeLessThan(250);
    const r = await post(h, key, { model: MODEL, input: repeated });
    expect(r.status, r.text).toBe(200);
    expect(r.json.data).toHaveLength(1);
  });
});
