import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { chatSimStats, handleChatCompletions } from '../../src/sim/openai-chat.js';
import { SimServer } from '../../src/sim/framework.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Chat completions end to end: a real gateway (SQLite, in-process limiter) in front of two
 * OpenAI-protocol simulators on loopback.
 */
let main: SimServer;
let backup: SimServer;
let gw: TestGateway;

// $1 per million input tokens = 1 micro per token; $4 per million output = 4 micros per token.
const PRICE = { per_million_input_tokens: 1, per_million_output_tokens: 4 };

beforeAll(async () => {
  main = await SimServer.start('openai-chat-main', handleChatCompletions, { settings: { apiKey: 'sk-main' } });
  backup = await SimServer.start('openai-chat-backup', handleChatCompletions, { settings: { apiKey: 'sk-backup' } });
  gw = await startTestGateway({
    upstreams: [
      { name: 'oa-main', vendor: 'openai', base_url: main.url, api_key: 'sk-main', models: ['gpt-4o', 'gpt-4o-mini'], model_map: { 'gpt-4o': 'gpt-4o-2024-08-06' }, priority: 1, timeout_ms: 5_000 },
      { name: 'oa-backup', vendor: 'openai', base_url: backup.url, api_key: 'sk-backup', models: ['gpt-4o-mini'], priority: 2, timeout_ms: 5_000 },
    ],
    models: {
      'gpt-4o': { capabilities: ['chat'], price: PRICE },
      'gpt-4o-mini': { capabilities: ['chat'], price: PRICE },
    },
  });
});

afterAll(async () => {
  await gw?.close();
  await main?.close();
  await backup?.close();
});

beforeEach(() => {
  for (const sim of [main, backup]) {
    sim.reset();
    for (const k of ['chatUsage', 'chatOmitUsage', 'chatChunkDelayMs']) delete sim.settings[k];
  }
});

async function ledger(accountName: string) {
  const a = await gw.services.store.getAccountByName(accountName);
  return gw.services.store.listLedger(a!.id);
}

const hello = { model: 'gpt-4o', messages: [{ role: 'user', content: 'Hello gateway' }] };

describe('POST /v1/chat/completions (non-streaming)', () => {
  it('forwards to the upstream with the mapped model and bills the reported usage by input and output', async () => {
    const { key, account } = await gw.newKey(10);
    main.settings.chatUsage = { prompt_tokens: 1234, completion_tokens: 56 };
    const before = await gw.balance(account);
    const res = await call(gw, 'POST', '/v1/chat/completions', { key, body: { ...hello, temperature: 0.1, brand_new_param: 'x' } });
    expect(res.status).toBe(200);
    expect(res.json.object).toBe('chat.completion');
    expect(res.json.choices[0].message.content).toBe('You said: Hello gateway');
    expect(res.json.usage).toMatchObject({ prompt_tokens: 1234, completion_tokens: 56 });
    const got = main.lastReceived('POST', '/v1/chat/completions')!;
    expect(got.headers.authorization).toBe('Bearer sk-main');
    expect(got.json).toMatchObject({ model: 'gpt-4o-2024-08-06', temperature: 0.1, brand_new_param: 'x' });
    expect(got.json.stream_options).toBeUndefined();
    expect(await gw.balance(account)).toBe(before - (1234 * 1 + 56 * 4));
    const entries = await ledger(account);
    expect(entries[0]).toMatchObject({ kind: 'charge', delta: -(1234 + 224) });
    expect(entries[0]!.note).toMatch(/1234 input \+ 56 output/);
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe('600');
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('599');
  });

  it('works with the official OpenAI SDK', async () => {
    const { key } = await gw.newKey(10);
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const out = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'ping' }] });
    expect(out.choices[0]!.message.content).toBe('You said: ping');
    expect(out.usage!.prompt_tokens).toBeGreaterThan(0);
  });

  it('fails over to the next upstream before answering', async () => {
    const { key } = await gw.newKey(10);
    main.inject({ kind: 'status', status: 503 });
    const res = await call(gw, 'POST', '/v1/chat/completions', { key, body: { ...hello, model: 'gpt-4o-mini' } });
    expect(res.status).toBe(200);
    expect(main.received('POST', '/v1/chat/completions')).toHaveLength(1);
    expect(backup.lastReceived('POST', '/v1/chat/completions')!.headers.authorization).toBe('Bearer sk-backup');
  });

  it('answers a moderation refusal with 400 content_policy_violation, without trying other upstreams', async () => {
    const { key, account } = await gw.newKey(10);
    const before = await gw.balance(account);
    const res = await call(gw, 'POST', '/v1/chat/completions', {
      key, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'something [moderation]' }] },
    });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ type: 'invalid_request_error', code: 'content_policy_violation' });
    expect(backup.received('POST', '/v1/chat/completions')).toHaveLength(0);
    expect(await gw.balance(account)).toBe(before);
  });

  it('answers 402 before calling any upstream when the balance cannot cover the estimate', async () => {
    const { key } = await gw.newKey(0.0001); // 100 micros
    const res = await call(gw, 'POST', '/v1/chat/completions', { key, body: { ...hello, max_tokens: 1000 } });
    expect(res.status).toBe(402);
    expect(res.json.error.type).toBe('insufficient_quota');
    expect(main.received('POST', '/v1/chat/completions')).toHaveLength(0);
  });

  it('rejects a body without messages with 400', async () => {
    const { key } = await gw.newKey(10);
    const res = await call(gw, 'POST', '/v1/chat/completions', { key, body: { model: 'gpt-4o' } });
    expect(res.status).toBe(400);
    expect(res.json.error.param).toBe('messages');
  });

  it('estimates usage when the upstream reports none', async () => {
    const { key, account } = await gw.newKey(10);
    main.settings.chatOmitUsage = true;
    const res = await call(gw, 'POST', '/v1/chat/completions', { key, body: hello });
    expect(res.status).toBe(200);
    const [entry] = await ledger(account);
    expect(entry!.delta).toBeLessThan(0);
    expect(entry!.note).toMatch(/estimated/);
  });
});

describe('chat billing while the database fails', () => {
  it('keeps a charge whose write failed and writes it once the database answers again', async () => {
    const { key, account } = await gw.newKey(10);
    main.settings.chatUsage = { prompt_tokens: 100, completion_tokens: 10 };
    const before = await gw.balance(account);
    const store = gw.services.store;
    const real = store.chargeMany.bind(store);
    let failures = 0;
    // The next write of charges fails as a database that went away does.
    store.chargeMany = async (items) => {
      if (failures++ === 0) throw new Error('connection refused');
      return real(items);
    };
    try {
      const res = await call(gw, 'POST', '/v1/chat/completions', { key, body: hello });
      expect(res.status).toBe(200);
      await gw.services.charges.drain(5_000);
    } finally {
      store.chargeMany = real;
    }
    expect(failures).toBeGreaterThanOrEqual(2);
    const entries = (await ledger(account)).filter((e) => e.kind === 'charge');
    expect(entries).toHaveLength(1);
    expect(before - (await gw.balance(account))).toBe(100 * 1 + 10 * 4);
  });
});

describe('POST /v1/chat/completions (streaming)', () => {
  it('relays the events, keeps the usage chunk from a client that did not ask, and bills it', async () => {
    const { key, account } = await gw.newKey(10);
    main.settings.chatUsage = { prompt_tokens: 300, completion_tokens: 20 };
    const before = await gw.balance(account);
    const res = await call(gw, 'POST', '/v1/chat/completions', { key, body: { ...hello, stream: true } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    expect(res.headers.get('x-ratelimit-limit-tokens')).toBe('200000');
    // Written on the raw response (the reply is hijacked), and private like every /v1 answer.
    expect(res.headers.get('cache-control')).toBe('no-store');
    const events = res.text.split('\n\n').filter(Boolean);
    expect(events[events.length - 1]).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)));
    expect(chunks.every((c) => c.choices.length > 0)).toBe(true);
    expect(chunks.map((c) => c.choices[0].delta.content ?? '').join('')).toBe('You said: Hello gateway');
    expect(main.lastReceived('POST', '/v1/chat/completions')!.json.stream_options).toEqual({ include_usage: true });
    expect(await gw.balance(account)).toBe(before - (300 + 20 * 4));
  });

  it('passes the usage chunk on to a client that asked for it (official SDK)', async () => {
    const { key, account } = await gw.newKey(10);
    main.settings.chatUsage = { prompt_tokens: 40, completion_tokens: 9 };
    const before = await gw.balance(account);
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o', messages: [{ role: 'user', content: 'stream me' }], stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('You said: stream me');
    expect(usage).toMatchObject({ prompt_tokens: 40, completion_tokens: 9 });
    expect(await gw.balance(account)).toBe(before - (40 + 36));
  });

  it('sends events as they arrive instead of buffering the stream', async () => {
    const { key } = await gw.newKey(10);
    main.settings.chatChunkDelayMs = 150;
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...hello, stream: true }),
    });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toMatch(/^data: /);
    // The first event reached us while the upstream was still generating.
    const s = chatSimStats(main);
    expect(s.streamsStarted - s.streamsCompleted - s.streamsCancelled).toBe(1);
    while (!(await reader.read()).done);
  });

  it('aborts the upstream when the client disconnects, and bills what was generated', async () => {
    const { key, account } = await gw.newKey(10);
    main.settings.chatChunkDelayMs = 200;
    const stats = chatSimStats(main);
    const cancelledBefore = stats.streamsCancelled;
    const ctrl = new AbortController();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'a long answer with many words to stream slowly' }], stream: true }),
      signal: ctrl.signal,
    });
    const reader = res.body!.getReader();
    // Up to the first generated word: the role-only chunk before it is no output.
    const decoder = new TextDecoder();
    let seen = '';
    while (!/"content":"[^"]/.test(seen)) seen += decoder.decode((await reader.read()).value, { stream: true });
    ctrl.abort();
    await reader.cancel().catch(() => undefined);
    for (let i = 0; i < 100 && stats.streamsCancelled === cancelledBefore; i++) await new Promise((r) => setTimeout(r, 50));
    expect(stats.streamsCancelled).toBe(cancelledBefore + 1);
    let entries = await ledger(account);
    for (let i = 0; i < 50 && entries.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      entries = await ledger(account);
    }
    expect(entries[0]).toMatchObject({ kind: 'charge' });
    expect(entries[0]!.note).toMatch(/estimated/);
  });

  it('fails over before the first byte when streaming', async () => {
    const { key } = await gw.newKey(10);
    main.inject({ kind: 'status', status: 500 });
    const res = await call(gw, 'POST', '/v1/chat/completions', { key, body: { ...hello, model: 'gpt-4o-mini', stream: true } });
    expect(res.status).toBe(200);
    expect(res.text).toContain('data: [DONE]');
    expect(backup.received('POST', '/v1/chat/completions')).toHaveLength(1);
  });

  it('answers 502 in the error shape when every upstream fails', async () => {
    const { key } = await gw.newKey(10);
    const res = await call(gw, 'POST', '/v1/chat/completions', {
      key, body: { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: '[fail]' }] },
    });
    expect(res.status).toBe(502);
    expect(res.json.error.type).toBe('server_error');
  });
});
