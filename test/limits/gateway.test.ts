import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import type { SimServer } from '../../src/sim/framework.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Rate limits through the whole gateway: one OpenAI-protocol simulator serves both chat and
 * embeddings, so the only thing keeping the two apart is the limiter's families.
 */
let sim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  sim = await startOpenAISimulator();
  gw = await startTestGateway({
    upstreams: [
      {
        name: 'oa', vendor: 'openai', base_url: sim.url, api_key: sim.settings.apiKey as string,
        models: ['gpt-4o-mini', 'text-embedding-3-small'], timeout_ms: 5_000,
      },
    ],
    models: {
      'gpt-4o-mini': { capabilities: ['chat'], price: { per_million_input_tokens: 0.15, per_million_output_tokens: 0.6 } },
      'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 0.02 } },
    },
  });
});

afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

const chat = (key: string, body: Record<string, unknown> = {}) =>
  call(gw, 'POST', '/v1/chat/completions', { key, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...body } });
const embed = (key: string, input: unknown = 'hello') =>
  call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input } });

describe('rate limits end to end', () => {
  it('the request after the last allowed one gets 429 rate_limit_error with Retry-After and x-ratelimit headers', async () => {
    const account = `rpm-${Date.now()}`;
    await gw.createAccount(account, { balance: 10 });
    const key = await gw.createKey(account, { limits: { chat: { rpm: 2 } } });
    expect((await chat(key)).status).toBe(200);
    const second = await chat(key);
    expect(second.status).toBe(200);
    expect(second.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    const third = await chat(key);
    expect(third.status).toBe(429);
    expect(third.json.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    const retry = Number(third.headers.get('retry-after'));
    expect(retry).toBeGreaterThanOrEqual(59);
    expect(retry).toBeLessThanOrEqual(60);
    expect(third.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect(third.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(third.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+(\.\d+)?s$|^1m0s$/);
  });

  it('exhausting chat leaves embeddings untouched', async () => {
    const account = `sep1-${Date.now()}`;
    await gw.createAccount(account, { balance: 10, limits: { chat: { rpm: 1 }, embeddings: { rpm: 2 } } });
    const key = await gw.createKey(account);
    expect((await chat(key)).status).toBe(200);
    expect((await chat(key)).status).toBe(429);
    const e1 = await embed(key);
    expect(e1.status).toBe(200);
    expect(e1.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect(e1.headers.get('x-ratelimit-remaining-requests')).toBe('1');
  });

  it('exhausting embeddings leaves chat untouched', async () => {
    const account = `sep2-${Date.now()}`;
    await gw.createAccount(account, { balance: 10, limits: { embeddings: { rpm: 1 }, chat: { rpm: 5 } } });
    const key = await gw.createKey(account);
    expect((await embed(key)).status).toBe(200);
    expect((await embed(key)).status).toBe(429);
    const c = await chat(key);
    expect(c.status).toBe(200);
    expect(c.headers.get('x-ratelimit-remaining-requests')).toBe('4');
  });

  it('counts tokens per minute and corrects the estimate with the usage the vendor reports', async () => {
    const account = `tpm-${Date.now()}`;
    await gw.createAccount(account, { balance: 10, limits: { chat: { rpm: 100, tpm: 1000 } } });
    const key = await gw.createKey(account);
    // Each request reserves its prompt plus 900 output tokens; the echo answer uses only a few.
    const first = await chat(key, { max_tokens: 900 });
    expect(first.status).toBe(200);
    const used = first.json.usage.total_tokens as number;
    expect(used).toBeLessThan(50);
    // Without the correction the window would hold ~910 tokens and this would be refused.
    const second = await chat(key, { max_tokens: 900 });
    expect(second.status).toBe(200);
    expect(Number(second.headers.get('x-ratelimit-remaining-tokens'))).toBeLessThan(1000 - 900);
    const tooMuch = await chat(key, { max_tokens: 990 });
    expect(tooMuch.status).toBe(429);
    expect(tooMuch.json.error.message).toMatch(/tokens per minute/);
  });

  it('counts an uncapped request with its output allowance and corrects it with the usage the vendor reports', async () => {
    const account = `tpm-uncapped-${Date.now()}`;
    await gw.createAccount(account, { balance: 10, limits: { chat: { rpm: 100, tpm: 10_000 } } });
    const key = await gw.createKey(account);
    // No max_tokens: the prompt plus the default allowance of 4,096 output tokens is counted at admission.
    const first = await chat(key);
    expect(first.status).toBe(200);
    const used = first.json.usage.total_tokens as number;
    expect(used).toBeLessThan(50);
    const left = Number(first.headers.get('x-ratelimit-remaining-tokens'));
    expect(left).toBeLessThanOrEqual(10_000 - 4_096);
    expect(left).toBeGreaterThan(10_000 - 4_096 - 50);
    // Corrected to the real usage afterwards: the next request sees only the first one's `used` tokens spent.
    const second = await chat(key, { max_tokens: 100 });
    expect(second.status).toBe(200);
    expect(Number(second.headers.get('x-ratelimit-remaining-tokens'))).toBeGreaterThan(10_000 - used - 100 - 50);
  });

  it('a quota below the allowance counts an uncapped request as half the minute, never as too large, and corrects it', async () => {
    const account = `tpm-small-${Date.now()}`;
    await gw.createAccount(account, { balance: 10, limits: { chat: { rpm: 100, tpm: 1000 } } });
    const key = await gw.createKey(account);
    const first = await chat(key);
    expect(first.status).toBe(200);
    // Prompt plus allowance counted as half the quota while it runs ...
    expect(first.headers.get('x-ratelimit-remaining-tokens')).toBe('500');
    const used = first.json.usage.total_tokens as number;
    // ... and corrected to its real usage once answered, so the next one fits at once.
    const second = await chat(key);
    expect(second.status).toBe(200);
    expect(second.headers.get('x-ratelimit-remaining-tokens')).toBe(String(500 - used));
  });

  it('refuses a request that could never fit in a minute with 400 request_too_large', async () => {
    const account = `big-${Date.now()}`;
    await gw.createAccount(account, { balance: 10, limits: { chat: { tpm: 100 } } });
    const key = await gw.createKey(account);
    const res = await chat(key, { max_tokens: 500 });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ type: 'invalid_request_error', code: 'request_too_large' });
    expect((await chat(key, { max_tokens: 20 })).status).toBe(200);
  });
});
