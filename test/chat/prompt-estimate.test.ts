import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { countText, estimatePromptTokens } from '../../src/chat/tokens.js';
import type { JsonObject } from '../../src/core/json.js';
import { handleChatCompletions } from '../../src/sim/openai-chat.js';
import { SimServer } from '../../src/sim/framework.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * A burst of chat requests against a tight TPM quota, key budget or balance is admitted on the prompt
 * estimate, and billed what the vendor reports. The estimate counts the prompt the vendor bills: a
 * json_schema in response_format, an image part at what gpt-4o-mini bills for one. Before, a 51 KB
 * schema was estimated at 9 tokens: 60 requests under TPM 20,000 were all admitted and billed 625,860
 * tokens, and a key budget of 0.01 spent 2.61.
 */
let sim: SimServer;
let gw: TestGateway;

// 1 micro per token, in and out: the ledger's micros are the tokens billed.
const PRICE = { per_million_input_tokens: 1, per_million_output_tokens: 1 };
const BURST = 60;

beforeAll(async () => {
  sim = await SimServer.start('openai-chat-estimate', handleChatCompletions, { settings: { apiKey: 'sk-main' } });
  gw = await startTestGateway({
    upstreams: [{ name: 'oa', vendor: 'openai', base_url: sim.url, api_key: 'sk-main', models: ['gpt-4o-mini'], timeout_ms: 10_000 }],
    models: { 'gpt-4o-mini': { capabilities: ['chat'], price: PRICE } },
  });
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});
beforeEach(() => {
  sim.reset();
  delete sim.settings.chatUsage;
  // Each answer takes a while: the burst is in flight together, as the bound is about.
  sim.latencyMs = 300;
});

/** A json_schema of about 51 KB: many fields, each with a description. */
function bigSchema(): JsonObject {
  const properties: JsonObject = {};
  for (let i = 0; i < 350; i++)
    properties[`field_${i}`] = { type: 'string', description: `The value of field ${i}, as written in the source document, without abbreviations or units.` };
  return { type: 'object', properties, required: Object.keys(properties), additionalProperties: false };
}

const schema = bigSchema();
const structured: JsonObject = {
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content: 'Fill in the form.' }],
  max_tokens: 1,
  response_format: { type: 'json_schema', json_schema: { name: 'form', strict: true, schema } },
};
// What the vendor bills for it: at least the schema's own tokens (OpenAI billed 10,431).
const STRUCTURED_PROMPT = countText(JSON.stringify(schema));

const withImage: JsonObject = {
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } }] }],
  max_tokens: 1,
};
// gpt-4o-mini bills a low-detail image 2,833 tokens, plus the text.
const IMAGE_PROMPT = 2_833 + 20;

async function burst(key: string, body: JsonObject) {
  const answers = await Promise.all(Array.from({ length: BURST }, () => call(gw, 'POST', '/v1/chat/completions', { key, body })));
  const refused = answers.filter((a) => a.status !== 200);
  return { admitted: BURST - refused.length, refusals: new Set(refused.map((a) => `${a.status} ${a.json?.error?.code}`)) };
}

/** Tokens billed to an account (1 micro each). */
async function billed(account: string): Promise<number> {
  const a = await gw.services.store.getAccountByName(account);
  return -(await gw.services.store.listLedger(a!.id)).filter((e) => e.kind === 'charge').reduce((sum, e) => sum + e.delta, 0);
}

describe('a burst of chat requests is admitted on a prompt estimate that counts response_format', () => {
  it('the estimate holds the schema', async () => {
    expect(Buffer.byteLength(JSON.stringify(schema))).toBeGreaterThan(50_000);
    expect(await estimatePromptTokens(structured)).toBeGreaterThanOrEqual(STRUCTURED_PROMPT);
  });

  it('under a TPM quota of 20,000: the admitted requests are billed no more than the quota', async () => {
    sim.settings.chatUsage = { prompt_tokens: STRUCTURED_PROMPT, completion_tokens: 1 };
    const { key, account } = await gw.newKey(10, { limits: { chat: { rpm: 1_000, tpm: 20_000 } } });
    const { admitted, refusals } = await burst(key, structured);
    expect(admitted).toBeGreaterThanOrEqual(1);
    expect([...refusals]).toEqual(['429 rate_limit_exceeded']);
    expect(await billed(account)).toBe(admitted * (STRUCTURED_PROMPT + 1));
    expect(await billed(account)).toBeLessThanOrEqual(20_000);
  });

  it('under a key budget: the admitted requests spend no more than the budget', async () => {
    sim.settings.chatUsage = { prompt_tokens: STRUCTURED_PROMPT, completion_tokens: 1 };
    const account = `estimate-${randomBytes(4).toString('hex')}`;
    await gw.createAccount(account, { balance: 10 });
    const { key } = await gw.services.admin.createKey({ account, budget: { total: '0.03' } });
    const { admitted, refusals } = await burst(key, structured);
    expect(admitted).toBeGreaterThanOrEqual(1);
    expect([...refusals]).toEqual(['402 key_budget_exceeded']);
    expect(await billed(account)).toBeLessThanOrEqual(30_000);
  });

  it('under a small balance: the balance does not go below zero', async () => {
    sim.settings.chatUsage = { prompt_tokens: STRUCTURED_PROMPT, completion_tokens: 1 };
    const { key, account } = await gw.newKey(0.03);
    const { admitted, refusals } = await burst(key, structured);
    expect(admitted).toBeGreaterThanOrEqual(1);
    expect([...refusals]).toEqual(['402 insufficient_quota']);
    expect(await gw.balance(account)).toBeGreaterThanOrEqual(0);
  });
});

describe('a burst of chat requests with an image', () => {
  it('is admitted on what a low-detail image bills on gpt-4o-mini, not 85 tokens', async () => {
    expect(await estimatePromptTokens(withImage)).toBeGreaterThanOrEqual(2_833);
    sim.settings.chatUsage = { prompt_tokens: IMAGE_PROMPT, completion_tokens: 1 };
    const { key, account } = await gw.newKey(10, { limits: { chat: { rpm: 1_000, tpm: 20_000 } } });
    const { admitted } = await burst(key, withImage);
    expect(admitted).toBeGreaterThanOrEqual(1);
    expect(await billed(account)).toBeLessThanOrEqual(20_000);
  });
});
