import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundUsage, HIDDEN_PROMPT_TOKENS, TEMPLATE_TOKENS_PER_MESSAGE } from '../../src/chat/believable-usage.js';
import { estimatePromptTokens, IMAGE_PART_CEILING, reservedCompletionTokens, UNCAPPED_OUTPUT_CEILING } from '../../src/chat/tokens.js';
import type { JsonObject } from '../../src/core/json.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * A chat answer is billed by the vendor's usage only within what the request can produce: output up to
 * the allowance held before the call, input up to what the request's bytes can hold. An upstream on
 * loopback reports whatever each test says; the ledger, the balance, the TPM window and the
 * reconciliation records show what was billed.
 */
let upstream: Server;
let gw: TestGateway;
let answer: (body: Record<string, unknown>, res: ServerResponse) => void = (_b, res) => res.end();

// 1,000 micros per input token, 2,000 per output token.
const IN = 1_000;
const OUT = 2_000;
// The allowance of an uncapped request on a model that declares no max_output_tokens.
const DEFAULT_RESERVE = 100;
const DECLARED_MAX = 300;

beforeAll(async () => {
  upstream = createServer((req: IncomingMessage, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => answer(JSON.parse(Buffer.concat(parts).toString('utf8')) as Record<string, unknown>, res));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const { port } = upstream.address() as { port: number };
  const price = { per_million_input_tokens: IN, per_million_output_tokens: OUT };
  gw = await startTestGateway({
    upstreams: [{ name: 'raw', vendor: 'openai', base_url: `http://127.0.0.1:${port}`, api_key: 'sk-upstream-0123456789', models: ['plain', 'declared'], timeout_ms: 5_000 }],
    models: { plain: { capabilities: ['chat'], price }, declared: { capabilities: ['chat'], price, max_output_tokens: DECLARED_MAX } },
    chat: { default_output_reserve_tokens: DEFAULT_RESERVE },
  });
});

afterAll(async () => {
  await gw?.close();
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
});

type Usage = Record<string, unknown>;
const completion = (usage: Usage) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
  usage,
});
const reports = (usage: Usage) => (answer = (_b, res) => (res.writeHead(200, { 'content-type': 'application/json' }), res.end(JSON.stringify(completion(usage)))));
const event = (c: unknown) => `data: ${JSON.stringify(c)}\n\n`;
const chunk = (content: string) => event({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] });

const messages = [{ role: 'user', content: 'hello there' }];
const chat = (key: string, body: Record<string, unknown>) => call(gw, 'POST', '/v1/chat/completions', { key, body: { model: 'plain', messages, ...body } });

async function charges(account: string) {
  await gw.services.charges.drain();
  const a = await gw.services.store.getAccountByName(account);
  return (await gw.services.store.listLedger(a!.id)).filter((e) => e.kind === 'charge');
}

/** The one charge of a fresh account, its reconciliation records, and the balance left of 10. */
async function billed(account: string) {
  const [charge, ...more] = await charges(account);
  expect(more).toHaveLength(0);
  const records = (await gw.services.store.listReconcile(200)).filter((r) => r.jobId === charge!.ref);
  return { micros: -charge!.delta, reasons: records.map((r) => r.reason), balance: await gw.balance(account), upstream: records[0]?.upstream };
}

describe('output tokens are billed up to the allowance held', () => {
  it('max_tokens 5, an answer "hi", 100,000,000 output tokens reported: billed 5 (the ledger, usage.cost, the balance), recorded for reconciliation', async () => {
    const { key, account } = await gw.newKey(10);
    reports({ prompt_tokens: 5, completion_tokens: 100_000_000, total_tokens: 100_000_005 });
    const r = await chat(key, { max_tokens: 5 });
    expect(r.status).toBe(200);
    const b = await billed(account);
    expect(b.micros).toBe(5 * IN + 5 * OUT);
    expect(r.json.usage.cost).toBe(b.micros / 1e6);
    expect(b.balance).toBe(10_000_000 - b.micros);
    expect(b.upstream).toBe('raw');
    expect(b.reasons).toEqual([expect.stringMatching(/^billed tokens adjusted: the upstream reported 100000000 output tokens, more than the 5 of the max_tokens held .*; billed 5$/)]);
  });

  it('max_tokens, which some vendors apply to the final answer alone: the reported reasoning is billed on top, up to the ceiling', async () => {
    const { key, account } = await gw.newKey(10);
    reports({ prompt_tokens: 5, completion_tokens: 50, completion_tokens_details: { reasoning_tokens: 40 } });
    await chat(key, { max_tokens: 10 });
    const honest = await billed(account);
    expect(honest.micros).toBe(5 * IN + 50 * OUT);
    expect(honest.reasons).toEqual([]);

    const hostile = await gw.newKey(1_000);
    reports({ prompt_tokens: 5, completion_tokens: 100_000_000, completion_tokens_details: { reasoning_tokens: 99_999_990 } });
    await chat(hostile.key, { max_tokens: 10 });
    const b = await billed(hostile.account);
    expect(b.micros).toBe(5 * IN + UNCAPPED_OUTPUT_CEILING * OUT);
    expect(b.reasons).toHaveLength(1);
  });

  it('max_completion_tokens times n, reasoning included: 50 reported for 2 x 3 is billed 6; a count within it is billed as reported, with no record', async () => {
    const { key, account } = await gw.newKey(10);
    reports({ prompt_tokens: 5, completion_tokens: 50, completion_tokens_details: { reasoning_tokens: 40 } });
    await chat(key, { max_completion_tokens: 3, n: 2 });
    const over = await billed(account);
    expect(over.micros).toBe(5 * IN + 6 * OUT);
    expect(over.reasons).toHaveLength(1);

    const within = await gw.newKey(10);
    reports({ prompt_tokens: 5, completion_tokens: 6, completion_tokens_details: { reasoning_tokens: 5 } });
    await chat(within.key, { max_completion_tokens: 3, n: 2 });
    const ok = await billed(within.account);
    expect(ok.micros).toBe(5 * IN + 6 * OUT);
    expect(ok.reasons).toEqual([]);
  });

  it("without max_tokens: the model's max_output_tokens; when it declares none, an honest long answer in full, an absurd one at the ceiling", async () => {
    {
      const { key, account } = await gw.newKey(10);
      reports({ prompt_tokens: 5, completion_tokens: 1_000 });
      expect((await chat(key, { model: 'declared' })).status).toBe(200);
      const b = await billed(account);
      expect(b.micros).toBe(5 * IN + DECLARED_MAX * OUT);
      expect(b.reasons).toEqual([expect.stringContaining(`more than the ${DECLARED_MAX} of the model's max_output_tokens`)]);
    }
    {
      const { key, account } = await gw.newKey(10);
      reports({ prompt_tokens: 5, completion_tokens: DECLARED_MAX - 1 });
      await chat(key, { model: 'declared' });
      expect((await billed(account)).micros).toBe(5 * IN + (DECLARED_MAX - 1) * OUT);
    }
    {
      // Longer than the hold's guess (DEFAULT_RESERVE) on a model of unknown limit: owed in full.
      const { key, account } = await gw.newKey(10);
      reports({ prompt_tokens: 5, completion_tokens: 1_000 });
      expect((await chat(key, { model: 'plain' })).status).toBe(200);
      const b = await billed(account);
      expect(b.micros).toBe(5 * IN + 1_000 * OUT);
      expect(b.reasons).toEqual([]);
    }
    {
      const { key, account } = await gw.newKey(1_000);
      reports({ prompt_tokens: 5, completion_tokens: 100_000_000 });
      expect((await chat(key, { model: 'plain', n: 2 })).status).toBe(200);
      const b = await billed(account);
      expect(b.micros).toBe(5 * IN + 2 * UNCAPPED_OUTPUT_CEILING * OUT);
      expect(b.reasons).toEqual([expect.stringContaining('more than the 262144 of the ceiling for a request without max_tokens')]);
    }
  });

  it('a fractional count is billed whole, rounded up', async () => {
    const { key, account } = await gw.newKey(10);
    reports({ prompt_tokens: 4.2, completion_tokens: 2.5 });
    await chat(key, { max_tokens: 5 });
    expect((await billed(account)).micros).toBe(5 * IN + 3 * OUT);
  });

  it('the TPM window is corrected by what was billed, not by the report', async () => {
    const { key } = await gw.newKey(10, { limits: { chat: { rpm: 1_000, tpm: 10_000 } } });
    reports({ prompt_tokens: 5, completion_tokens: 100_000_000 });
    expect((await chat(key, { max_tokens: 5 })).status).toBe(200);
    reports({ prompt_tokens: 10, completion_tokens: 5 });
    const next = await chat(key, { max_tokens: 5 });
    expect(next.status).toBe(200);
    // The first request's 5 + 5 billed, and the second's estimate at its admission.
    expect(Number(next.headers.get('x-ratelimit-remaining-tokens'))).toBe(10_000 - (5 + 5) - ((await estimatePromptTokens({ messages })) + 5));
  });
});

describe('input tokens are billed up to what the request can hold', () => {
  it("a count past the request's bytes is no count: the gateway's estimate is billed, and recorded", async () => {
    const { key, account } = await gw.newKey(10);
    reports({ prompt_tokens: 50_000_000, completion_tokens: 1 });
    await chat(key, { max_tokens: 5 });
    const b = await billed(account);
    expect(b.micros).toBe((await estimatePromptTokens({ messages })) * IN + 1 * OUT);
    expect(b.reasons).toEqual([expect.stringMatching(/the upstream reported 50000000 input tokens, more than a request of \d+ bytes and 1 messages can hold; billed the gateway's estimate/)]);
  });

  it('up to bytes + template tokens + hidden instructions is believed; one more is not', async () => {
    const body = { model: 'plain', messages, max_tokens: 5 };
    const ceiling = Buffer.byteLength(JSON.stringify(body)) + TEMPLATE_TOKENS_PER_MESSAGE + HIDDEN_PROMPT_TOKENS;
    const at = await gw.newKey(10);
    reports({ prompt_tokens: ceiling, completion_tokens: 1 });
    await chat(at.key, body);
    expect((await billed(at.account)).micros).toBe(ceiling * IN + OUT);
    const past = await gw.newKey(10);
    reports({ prompt_tokens: ceiling + 1, completion_tokens: 1 });
    await chat(past.key, body);
    expect((await billed(past.account)).micros).toBe((await estimatePromptTokens(body)) * IN + OUT);
  });

  it('an image is counted by the vendor: its prompt is believed past the bytes of the request, up to the ceiling of an image', async () => {
    const content: JsonObject[] = [{ type: 'text', text: 'what is this' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }];
    const body: JsonObject = { model: 'plain', max_tokens: 5, messages: [{ role: 'user', content }, { role: 'user', content }] };
    const ceiling = Buffer.byteLength(JSON.stringify(body)) + 2 * TEMPLATE_TOKENS_PER_MESSAGE + HIDDEN_PROMPT_TOKENS + 2 * IMAGE_PART_CEILING;
    const at = await gw.newKey(10);
    reports({ prompt_tokens: ceiling, completion_tokens: 1 });
    await chat(at.key, body);
    expect(await billed(at.account)).toMatchObject({ micros: ceiling * IN + OUT, reasons: [] });
    const past = await gw.newKey(10);
    reports({ prompt_tokens: ceiling + 1, completion_tokens: 1 });
    await chat(past.key, body);
    const b = await billed(past.account);
    expect(b.micros).toBe((await estimatePromptTokens(body)) * IN + OUT);
    expect(b.reasons).toEqual([expect.stringMatching(/more than a request of \d+ bytes and 2 messages with 2 images can hold/)]);
  });

  it('audio is counted by the vendor by its own rules: its prompt is believed up to the general bound', async () => {
    const { key, account } = await gw.newKey(100);
    reports({ prompt_tokens: 50_000, completion_tokens: 1 });
    const content = [{ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } }];
    await chat(key, { max_tokens: 5, messages: [{ role: 'user', content }] });
    expect(await billed(account)).toMatchObject({ micros: 50_000 * IN + OUT, reasons: [] });
  });
});

describe('streams', () => {
  it('a usage chunk reporting 100,000,000 output tokens for max_tokens 5 carries the capped cost, the one the ledger holds', async () => {
    const { key, account } = await gw.newKey(10);
    answer = (_b, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(chunk('hi') + event({ id: 'c1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 5, completion_tokens: 100_000_000 } }) + 'data: [DONE]\n\n');
    };
    const r = await chat(key, { max_tokens: 5, stream: true, stream_options: { include_usage: true } });
    expect(r.status).toBe(200);
    const usage = JSON.parse(r.text.split('\n\n').filter(Boolean).at(-2)!.slice('data: '.length)).usage;
    const b = await billed(account);
    expect(b.micros).toBe(5 * IN + 5 * OUT);
    expect(usage.cost).toBe(b.micros / 1e6);
    expect(b.balance).toBe(10_000_000 - b.micros);
    expect(b.reasons).toHaveLength(1);
  });

  it('a stream that ignores max_tokens and reports no usage is relayed whole and billed at the cap', async () => {
    const { key, account } = await gw.newKey(10);
    const sent = 3_000;
    answer = (_b, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(Array.from({ length: sent }, (_, i) => chunk(`w${i} `)).join('') + 'data: [DONE]\n\n');
    };
    const r = await chat(key, { max_tokens: 50, stream: true });
    expect(r.status).toBe(200);
    expect(r.text.split('\n\n').filter((e) => e.includes('"content"'))).toHaveLength(sent);
    // A stream is billed after its last byte went out.
    await new Promise((res) => setTimeout(res, 100));
    const b = await billed(account);
    expect(b.micros).toBe((await estimatePromptTokens({ messages })) * IN + 50 * OUT);
    expect(b.reasons).toEqual([expect.stringContaining(`the stream carried ${sent} events of generated output and no usage, more than the 50`)]);
  });
});

describe('boundUsage', () => {
  it('an allowance of 0 (nothing held for uncapped requests) still bounds output at the ceiling', () => {
    const usage = { promptTokens: 3, completionTokens: 9_000, reported: true };
    const output = reservedCompletionTokens({}, { fallback: 0 });
    expect(boundUsage(usage, { body: { messages }, promptEstimate: 9, output })).toEqual({ usage });
    const absurd = boundUsage({ ...usage, completionTokens: 1e8 }, { body: { messages }, promptEstimate: 9, output });
    expect(absurd.usage.completionTokens).toBe(UNCAPPED_OUTPUT_CEILING);
  });
});
