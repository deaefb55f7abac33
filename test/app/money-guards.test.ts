import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddingModule as openai } from '../../src/embeddings/vendors/openai/index.js';
import type { SimServer } from '../../src/sim/framework.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Money and input guards across endpoints: parallel requests cannot overdraw, a request answered
 * 408 is not charged, hostile bodies are 400s.
 */
let sim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  sim = await openai.simulator.start({});
  const d = openai.simulator.demo(sim);
  gw = await startTestGateway({
    server: { request_timeout_ms: 500 },
    upstreams: [{ ...d.options, name: 'oai', vendor: 'openai', base_url: sim.url, api_key: d.apiKey, models: ['text-embedding-3-small'] }],
    // A steep price so that one short input costs 0.9 of a 1.0 balance.
    models: { 'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 300_000 } } },
  });
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

const embed = (key: string, input: string) => call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input } });

describe('money guards', () => {
  it('parallel requests on one balance cannot all pass the balance check', async () => {
    const { key, account } = await gw.newKey(1);
    const input = 'one two three'; // 3 tokens x 0.3 = 0.9
    sim.latencyMs = 150;
    const results = await Promise.all(Array.from({ length: 8 }, () => embed(key, input)));
    sim.latencyMs = 0;
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect(ok.length + refused.length).toBe(8);
    expect(ok).toHaveLength(1);
    expect(refused[0]!.json.error.type).toBe('insufficient_quota');
    expect(await gw.balance(account)).toBeGreaterThanOrEqual(0);
  });

  it('a request answered 408 is not charged, and its upstream call is cancelled', async () => {
    const { key, account } = await gw.newKey(10);
    sim.latencyMs = 1200;
    const r = await embed(key, 'slow');
    sim.latencyMs = 0;
    expect(r.status).toBe(408);
    await new Promise((res) => setTimeout(res, 1000));
    expect(await gw.balance(account)).toBe(10_000_000);
  });
});

describe('hostile bodies', () => {
  it('a deeply nested body is a 400 on every JSON endpoint, not a 500', async () => {
    const { key } = await gw.newKey(10);
    const deep = `{"model":"text-embedding-3-small","input":"x","extra":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    for (const path of ['/v1/embeddings', '/v1/videos/generations', '/v1/chat/completions']) {
      const r = await call(gw, 'POST', path, { key, body: deep });
      expect(r.status, path).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'too_deep' });
    }
  });

  it('a forbidden key is a 400 forbidden_key on every JSON endpoint; broken JSON that names one stays invalid_json', async () => {
    const { key, account } = await gw.newKey(10);
    const bodies = [
      '{"model":"text-embedding-3-small","input":"x","__proto__":{"a":1}}',
      '{"model":"text-embedding-3-small","input":"x","o":{"constructor":{"prototype":{"a":1}}}}',
    ];
    for (const path of ['/v1/embeddings', '/v1/videos/generations', '/v1/videos', '/v1/chat/completions']) {
      for (const body of bodies) {
        const r = await call(gw, 'POST', path, { key, body });
        expect(r.status, `${path} ${body}`).toBe(400);
        expect(r.json.error, `${path} ${body}`).toMatchObject({ type: 'invalid_request_error', code: 'forbidden_key' });
      }
      // Not JSON at all, though it holds the words: the plain answer.
      const broken = await call(gw, 'POST', path, { key, body: '{"__proto__": constructor.prototype' });
      expect(broken.json.error, path).toMatchObject({ type: 'invalid_request_error', code: 'invalid_json' });
    }
    expect(await gw.balance(account)).toBe(10_000_000);
  });

  it('a deep nesting is refused before the body is parsed, on any path, with or without a key', async () => {
    // Deep, then not JSON at all: a parser that ran first would answer "invalid JSON", not too_deep.
    const deepThenBroken = `${'['.repeat(100_000)}not json`;
    for (const path of ['/nope', '/health', '/console/session']) {
      // The sign-in takes at most 4 KiB (a larger body is a 413 unread): as deep, within that.
      const body = path === '/console/session' ? deepThenBroken.slice(-4000) : deepThenBroken;
      const r = await call(gw, 'POST', path, { body, headers: { 'content-type': 'application/json' } });
      expect(r.status, path).toBe(400);
      expect(r.json.error, path).toMatchObject({ type: 'invalid_request_error', code: 'too_deep' });
    }
    // The same with a key, also on the DELETE routes whose scopes read an empty JSON body as none.
    const { key } = await gw.newKey(10);
    for (const [method, path] of [['POST', '/v1/embeddings'], ['DELETE', '/v1/videos/some-id'], ['DELETE', '/v1/files/file-some-id']] as const) {
      const r = await call(gw, method, path, { key, body: deepThenBroken, headers: { 'content-type': 'application/json' } });
      expect(r.status, path).toBe(400);
      expect(r.json.error, path).toMatchObject({ type: 'invalid_request_error', code: 'too_deep' });
    }
    // Brackets inside strings (escaped quotes too) are text, not nesting.
    const r = await call(gw, 'POST', '/v1/embeddings', { key, body: JSON.stringify({ model: 'text-embedding-3-small', input: `${'['.repeat(500)}\"${'{'.repeat(500)}` }) });
    expect(r.json?.error?.code).not.toBe('too_deep');
  });

  it('a body of more top-level fields than any API takes is a 400 on every JSON endpoint, refused before it is parsed', async () => {
    const { key } = await gw.newKey(10);
    const fields = (n: number) => Array.from({ length: n }, (_, i) => `"k${i}":1`).join(',');
    // 500k fields (5.9 MB, under the body limit), then text that is not JSON: a parser that ran first
    // would answer "invalid JSON" after parsing half a million fields.
    const wide = `{"model":"text-embedding-3-small","input":"x",${fields(500_000)},not json`;
    for (const path of ['/v1/embeddings', '/v1/videos/generations', '/v1/chat/completions', '/v1/videos']) {
      const r = await call(gw, 'POST', path, { key, body: wide });
      expect(r.status, path).toBe(400);
      expect(r.json.error, path).toMatchObject({ type: 'invalid_request_error', code: 'too_many_fields' });
    }
    // As many as allowed, with nested objects of any width, is an ordinary request.
    const nested = `{${fields(500)}}`;
    const atLimit = `{"model":"text-embedding-3-small","input":"x","dimensions":8,"user":"u",${fields(250)},"nested":${nested},"list":[${nested}]}`;
    const r = await call(gw, 'POST', '/v1/embeddings', { key, body: atLimit });
    expect(r.json?.error?.code).not.toBe('too_many_fields');
    expect(r.status).toBeLessThan(500);
  });

  it('a body whose objects hold more members in all than any API takes is a 400, also one level down', async () => {
    const { key, account } = await gw.newKey(10);
    const fields = (n: number) => Array.from({ length: n }, (_, i) => `"k${i}":1`).join(',');
    // 500k members under one field (5.9 MB): the top level has three fields, so only the whole count can refuse it.
    for (const [path, body] of [
      ['/v1/videos/generations', `{"model":"wan2.6-t2v","prompt":"x","parameters":{${fields(500_000)}}}`],
      ['/v1/embeddings', `{"model":"text-embedding-3-small","input":"x","extra_body":{${fields(500_000)}}}`],
      ['/v1/chat/completions', `{"model":"gpt-4o-mini","messages":[${Array.from({ length: 30_000 }, () => '{}').join(',')}]}`],
      // Empty arrays, as many (3.5 million in 10 MiB): each costs the parser as an object does.
      ['/v1/embeddings', `{"model":"text-embedding-3-small","input":"x","x":[${Array.from({ length: 30_000 }, () => '[]').join(',')}]}`],
    ] as const) {
      const r = await call(gw, 'POST', path, { key, body });
      expect(r.status, path).toBe(400);
      expect(r.json.error, path).toMatchObject({ type: 'invalid_request_error', code: 'too_many_fields' });
    }
    expect(await gw.balance(account)).toBe(10_000_000);
  });

  it('a malformed %-escape in the path gets the spec shape', async () => {
    const { key } = await gw.newKey(10);
    const r = await call(gw, 'GET', '/v1/videos/%ZZ', { key });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'malformed_request' });
  });
});
