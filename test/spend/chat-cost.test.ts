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

async function ledgerCharges(account: string) {
  const accountId = (await gw.services.store.getAccountByName(account))!.id;
  return (await gw.services.store.listLedger(accountId)).filter((e) => e.kind === 'charge');
}

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
    // chat:<UUID version 7>: its first 48 bits are the charge's time (core/time-ordered-id.ts).
    expect(charge.ref).toMatch(/^chat:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(charge.ref.slice(5, 13) + charge.ref.slice(14, 18), 16)).toBe(charge.createdAt);
  });

  it('a streamed answer (official SDK, include_usage) carries in its usage chunk the cost the ledger captured', async () => {
    const { key, account } = await gw.newKey(10);
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1` });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'tell me three things about streams' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: (OpenAI.CompletionUsage & { cost?: number }) | undefined;
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? '';
      if (c.usage) usage = c.usage;
    }
    const charges = await ledgerCharges(account);
    expect(charges).toHaveLength(1);
    expect(text).toContain('You said');
    expect(usage!.prompt_tokens).toBeGreaterThan(0);
    expect(usage!.completion_tokens).toBeGreaterThan(0);
    expect(usage!.cost).toBeGreaterThan(0);
    expect(usage!.cost).toBe(-charges[0]!.delta / 1e6);
  });

  it('raw SSE: the usage chunk is the last event before [DONE], priced as charged; without include_usage nothing extra is sent', async () => {
    const { key, account } = await gw.newKey(10);
    const post = (streamOptions?: object) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'one two three' }], stream: true, ...(streamOptions ? { stream_options: streamOptions } : {}) }),
      }).then(async (r) => ({ status: r.status, events: (await r.text()).split('\n\n').filter(Boolean) }));

    const withUsage = await post({ include_usage: true });
    expect(withUsage.status).toBe(200);
    expect(withUsage.events.at(-1)).toBe('data: [DONE]');
    const last = JSON.parse(withUsage.events.at(-2)!.slice('data: '.length));
    expect(last.choices).toEqual([]);
    const first = await ledgerCharges(account);
    expect(first).toHaveLength(1);
    expect(last.usage.cost).toBe(-first[0]!.delta / 1e6);
    expect(last.usage.total_tokens).toBe(last.usage.prompt_tokens + last.usage.completion_tokens);

    const plain = await post();
    expect(plain.status).toBe(200);
    expect(plain.events.some((e) => e.includes('"usage":{'))).toBe(false);
    // Billed all the same, from the usage the gateway asked the vendor for.
    expect(await ledgerCharges(account)).toHaveLength(2);
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
