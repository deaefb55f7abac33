import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleChatCompletions } from '../../src/sim/openai-chat.js';
import { SimServer } from '../../src/sim/framework.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/** Chat answers carry usage.cost (the charge, in currency units); chat spends a key's budget like embeddings. */
let sim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  sim = await SimServer.start('openai-chat-cost', handleChatCompletions, { settings: { apiKey: 'sk-main' } });
  gw = await startTestGateway({
    upstreams: [{ name: 'oa', vendor: 'openai', base_url: sim.url, api_key: 'sk-main', models: ['gpt-4o'], timeout_ms: 5_000 }],
    // 10 per million input, 40 per million output tokens.
    models: { 'gpt-4o': { capabilities: ['chat'], price: { per_million_input_tokens: 10, per_million_output_tokens: 40 } } },
  });
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

describe('chat usage.cost', () => {
  it('equals the ledger charge, keeps the vendor usage fields, and the SDK parses the answer', async () => {
    const { key, account } = await gw.newKey(10);
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1` });
    const answer = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello there' }] });
    const accountId = (await gw.services.store.getAccountByName(account))!.id;
    const charge = (await gw.services.store.listLedger(accountId)).find((e) => e.kind === 'charge')!;
    expect(charge.keyId).not.toBeNull();
    expect(charge).toMatchObject({ model: 'gpt-4o', upstream: 'oa' });
    expect(answer.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(answer.usage!.completion_tokens).toBeGreaterThan(0);
    expect((answer.usage as unknown as { cost: number }).cost).toBe(-charge.delta / 1e6);
    expect(answer.choices[0]!.message.content).toBeTruthy();
  });

  it('a chat request over the key budget is refused before the upstream sees it', async () => {
    const account = 'chat-budget';
    await gw.createAccount(account, { balance: 10 });
    const { key } = await gw.services.admin.createKey({ account, budget: { total: '0.000001' } });
    const before = sim.requests.length;
    const r = await call(gw, 'POST', '/v1/chat/completions', { key, body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 } });
    expect(r.status).toBe(402);
    expect(r.json.error.code).toBe('key_budget_exceeded');
    expect(sim.requests.length).toBe(before);
  });
});
