import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { handleChatCompletions } from '../../src/sim/openai-chat.js';
import { SimServer } from '../../src/sim/framework.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * A chat request without max_tokens holds an output allowance against the balance and the key
 * budget while it runs (the model's declared max_output_tokens, else chat.default_output_reserve_tokens),
 * so requests in flight together cannot spend past either by all their output. The real usage is
 * what is charged; a refusal holds nothing afterwards.
 */
let sim: SimServer;
let gw: TestGateway;

// 1 micro per input token, 4 per output token.
const PRICE = { per_million_input_tokens: 1, per_million_output_tokens: 4 };
// The configured allowance: 2,000 output tokens = 8,000 micros held by an uncapped gpt-4o request.
const ALLOWANCE_MICROS = 2_000 * 4;
// The usage the simulator reports for every answer: 12 + 7 x 4 = 40 micros charged.
const USAGE = { prompt_tokens: 12, completion_tokens: 7 };
const CHARGE = 40;

beforeAll(async () => {
  sim = await SimServer.start('openai-chat-hold', handleChatCompletions, { settings: { apiKey: 'sk-main' } });
  gw = await startTestGateway({
    upstreams: [{ name: 'oa', vendor: 'openai', base_url: sim.url, api_key: 'sk-main', models: ['gpt-4o', 'gpt-4o-long'], timeout_ms: 5_000 }],
    models: {
      'gpt-4o': { capabilities: ['chat'], price: PRICE },
      // Declares its own output limit (3,000 tokens = 12,000 micros), which replaces the configured allowance.
      'gpt-4o-long': { capabilities: ['chat'], price: PRICE, max_output_tokens: 3_000 },
    },
    chat: { default_output_reserve_tokens: 2_000 },
  });
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});
beforeEach(() => {
  sim.reset();
  sim.settings.chatUsage = USAGE;
  delete sim.settings.chatChunkDelayMs;
});

const hello = { model: 'gpt-4o', messages: [{ role: 'user', content: 'Hello gateway' }] };
const chat = (key: string, body: Record<string, unknown> = {}) => call(gw, 'POST', '/v1/chat/completions', { key, body: { ...hello, ...body } });
const upstreamCalls = () => sim.received('POST', '/v1/chat/completions').length;

async function charges(account: string) {
  const a = await gw.services.store.getAccountByName(account);
  return (await gw.services.store.listLedger(a!.id)).filter((e) => e.kind === 'charge');
}

/** A streamed request whose answer is under way (its hold taken) until `finish` reads it to the end. */
async function openStream(key: string) {
  sim.settings.chatChunkDelayMs = 100;
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...hello, stream: true }),
  });
  expect(res.status).toBe(200);
  return { finish: () => res.text() };
}

describe('chat without max_tokens: the balance', () => {
  it('a balance that covers the prompt but not the allowance is 402 insufficient_quota, in the spec shape; a small max_tokens goes through and is charged its usage', async () => {
    const { key, account } = await gw.newKey(0.005); // 5,000 micros: the prompt, not the 8,000 of the allowance
    for (const stream of [false, true]) {
      const refused = await chat(key, { stream });
      expect(refused.status).toBe(402);
      expect(refused.headers.get('content-type')).toMatch(/application\/json/);
      expect(Object.keys(refused.json)).toEqual(['error']);
      expect(refused.json.error).toEqual({ type: 'insufficient_quota', code: 'insufficient_quota', message: expect.stringMatching(/max_tokens/) });
    }
    expect(upstreamCalls()).toBe(0);
    expect(await gw.balance(account)).toBe(5_000);

    const capped = await chat(key, { max_tokens: 50 });
    expect(capped.status).toBe(200);
    expect(capped.json.usage.cost).toBe(CHARGE / 1e6);
    expect((await charges(account)).map((c) => c.delta)).toEqual([-CHARGE]);
    expect(await gw.balance(account)).toBe(5_000 - CHARGE);
  });

  it("holds the model's declared max_output_tokens instead of the configured allowance, and a larger cap only up to it", async () => {
    const { key, account } = await gw.newKey(0.01); // 10,000 micros: 8,000 fits, 12,000 does not
    expect((await chat(key)).status).toBe(200);
    const long = await chat(key, { model: 'gpt-4o-long' });
    expect(long.status).toBe(402);
    expect(long.json.error.message).toMatch(/3000 output tokens/);

    const { key: rich } = await gw.newKey(0.02); // 20,000 micros: the 12,000 of the model's limit fits
    // A cap far above what the model can produce is held as the model's limit, not as asked.
    expect((await chat(rich, { model: 'gpt-4o-long', max_tokens: 1_000_000 })).status).toBe(200);
    expect((await chat(rich, { model: 'gpt-4o-long', max_completion_tokens: 1_000_000, n: 2 })).status).toBe(402);
    expect(await gw.balance(account)).toBe(10_000 - CHARGE);
  });

  it('requests in flight together hold the allowance each: the one that does not fit waits for the first to settle, and each is charged its usage', async () => {
    const { key, account } = await gw.newKey(0.01); // one hold of 8,000 fits, two do not
    const first = await openStream(key);
    const second = await chat(key);
    expect(second.status).toBe(402);
    expect(second.json.error.code).toBe('insufficient_quota');
    // A request with its own small cap still fits beside the one in flight.
    expect((await chat(key, { max_tokens: 100 })).status).toBe(200);
    expect(await first.finish()).toContain('[DONE]');
    // Once the stream is billed its hold is given back, once: the next uncapped request fits again.
    await vi.waitFor(async () => expect((await chat(key)).status).toBe(200), { timeout: 3_000, interval: 20 });
    expect((await charges(account)).map((c) => c.delta)).toEqual([-CHARGE, -CHARGE, -CHARGE]);
    expect(await gw.balance(account)).toBe(10_000 - 3 * CHARGE);
  });
});

describe('chat without max_tokens: the key budget', () => {
  it('a budget that covers the prompt but not the allowance is 402 key_budget_exceeded, counting nothing; a small max_tokens counts its charge', async () => {
    const account = `hold-${randomBytes(4).toString('hex')}`;
    await gw.createAccount(account, { balance: 10 });
    const { key, record } = await gw.services.admin.createKey({ account, budget: { total: '0.005' } });
    const refused = await chat(key);
    expect(refused.status).toBe(402);
    expect(refused.json.error).toEqual({ type: 'insufficient_quota', code: 'key_budget_exceeded', message: expect.stringMatching(/max_tokens/) });
    expect(upstreamCalls()).toBe(0);
    expect((await gw.services.store.keySpend(record.id, Date.now())).total).toBe(0);

    expect((await chat(key, { max_tokens: 50 })).status).toBe(200);
    // The estimate counted at the start was replaced by the real charge.
    expect((await gw.services.store.keySpend(record.id, Date.now())).total).toBe(CHARGE);
    expect(await gw.balance(account)).toBe(10_000_000 - CHARGE);
  });

  it('an uncapped request in flight keeps its allowance counted against the budget until it is billed', async () => {
    const account = `hold-${randomBytes(4).toString('hex')}`;
    await gw.createAccount(account, { balance: 10 });
    const { key, record } = await gw.services.admin.createKey({ account, budget: { total: '0.01' } });
    const first = await openStream(key);
    const second = await chat(key);
    expect(second.status).toBe(402);
    expect(second.json.error.code).toBe('key_budget_exceeded');
    await first.finish();
    await vi.waitFor(async () => expect((await gw.services.store.keySpend(record.id, Date.now())).total).toBe(CHARGE), { timeout: 3_000, interval: 20 });
    expect((await chat(key)).status).toBe(200);
    expect((await gw.services.store.keySpend(record.id, Date.now())).total).toBe(2 * CHARGE);
  });
});

describe('chat with a cap no balance can hold', () => {
  // TPM set to 0 (unlimited) on the key and the account: nothing refuses the cap as too large first.
  const unlimited = { chat: { rpm: 0, tpm: 0 } };
  // The largest counts validation lets through (larger ones are a 400): their product, and the cap
  // alone, are holds far past what the ledger holds.
  const caps = [{ max_tokens: Number.MAX_SAFE_INTEGER, n: Number.MAX_SAFE_INTEGER }, { max_tokens: Number.MAX_SAFE_INTEGER }];

  it('is 402 insufficient_quota, and the account goes on as before', async () => {
    const account = `hold-${randomBytes(4).toString('hex')}`;
    await gw.createAccount(account, { balance: 10, limits: unlimited });
    const { key } = await gw.services.admin.createKey({ account, limits: unlimited });
    for (const cap of caps) {
      const refused = await chat(key, cap);
      expect(refused.status).toBe(402);
      expect(refused.json.error.type).toBe('insufficient_quota');
    }
    expect(upstreamCalls()).toBe(0);
    // The refused holds left nothing in flight: an ordinary request fits the balance of 10.
    expect((await chat(key)).status).toBe(200);
    expect(await gw.balance(account)).toBe(10_000_000 - CHARGE);
  });

  it('is 402 key_budget_exceeded for a key with a budget, counting nothing', async () => {
    const account = `hold-${randomBytes(4).toString('hex')}`;
    await gw.createAccount(account, { balance: 10, limits: unlimited });
    const { key, record } = await gw.services.admin.createKey({ account, limits: unlimited, budget: { total: '5' } });
    for (const cap of caps) {
      const refused = await chat(key, cap);
      expect(refused.status).toBe(402);
      expect(refused.json.error.code).toBe('key_budget_exceeded');
    }
    expect((await gw.services.store.keySpend(record.id, Date.now())).total).toBe(0);
    expect((await chat(key)).status).toBe(200);
  });
});
