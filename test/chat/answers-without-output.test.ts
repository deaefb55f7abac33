import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Chat answers that carry no completion, from upstreams that misbehave on purpose: a 2xx whose body
 * is an error (or no completion at all), and streams that end before generating anything. None of
 * them is billed and none of the upstream's words reach the client unredacted. Two raw HTTP servers
 * on loopback: `first` serves both models, `second` only `pair`, after `first`.
 */
type Answer = (req: IncomingMessage, res: ServerResponse) => void;
const FIRST_KEY = 'sk-first-upstream-secret-0123456789abcdef';
const SECOND_KEY = 'sk-second-upstream-secret-0123456789abcdef';
const INTERNAL = 'http://10.1.2.3:8080/v1';
const TPM = 100_000;

let first: Server;
let second: Server;
let gw: TestGateway;
const answers: { first: Answer; second: Answer } = { first: (_q, s) => s.end(), second: (_q, s) => s.end() };
const received = { first: 0, second: 0 };

async function listen(name: 'first' | 'second'): Promise<Server> {
  const server = createServer((req, res) => {
    received[name]++;
    req.resume();
    req.on('end', () => answers[name](req, res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

const urlOf = (s: Server) => `http://127.0.0.1:${(s.address() as { port: number }).port}`;

beforeAll(async () => {
  first = await listen('first');
  second = await listen('second');
  const price = { per_million_input_tokens: 1, per_million_output_tokens: 4 };
  gw = await startTestGateway({
    upstreams: [
      { name: 'first', vendor: 'openai', base_url: urlOf(first), api_key: FIRST_KEY, models: ['solo', 'pair'], priority: 1, timeout_ms: 2_000 },
      { name: 'second', vendor: 'openai', base_url: urlOf(second), api_key: SECOND_KEY, models: ['pair'], priority: 2, timeout_ms: 2_000 },
    ],
    models: { solo: { capabilities: ['chat'], price }, pair: { capabilities: ['chat'], price } },
  });
});

afterAll(async () => {
  await gw?.close();
  for (const s of [first, second]) {
    s?.closeAllConnections();
    await new Promise((r) => s?.close(r));
  }
});

beforeEach(() => {
  received.first = received.second = 0;
});

function json(res: ServerResponse, body: unknown, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

const completion = (content: string, usage = true) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
  ...(usage ? { usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } } : {}),
});

const chunk = (delta: Record<string, unknown>) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta }] })}\n\n`;

async function account() {
  return gw.newKey(10, { limits: { chat: { rpm: 1_000, tpm: TPM } } });
}

const chat = (key: string, model: string, stream: boolean) =>
  call(gw, 'POST', '/v1/chat/completions', { key, body: { model, stream, max_tokens: 100, messages: [{ role: 'user', content: 'hello there' }] } });

async function charges(accountName: string) {
  // A stream is billed after its last byte went out: give that a moment.
  await new Promise((r) => setTimeout(r, 150));
  await gw.services.charges.drain();
  const a = await gw.services.store.getAccountByName(accountName);
  return (await gw.services.store.listLedger(a!.id)).filter((e) => e.kind === 'charge');
}

/** The tokens left in the minute, seen by the next request (given an ordinary answer). */
async function tokensLeft(key: string, model: string): Promise<number> {
  answers.first = (_q, res) => json(res, completion('ok'));
  const r = await chat(key, model, false);
  expect(r.status).toBe(200);
  return Number(r.headers.get('x-ratelimit-remaining-tokens'));
}

describe('a non-streamed 2xx that carries no completion', () => {
  const errorBody = { error: { message: `Incorrect API key provided: ${FIRST_KEY} via ${INTERNAL}`, type: 'invalid_request_error' } };

  it('is the upstream failing: 502 upstream_error quoting none of it, nothing charged, the tokens given back', async () => {
    const { key, account: name } = await account();
    const before = await gw.balance(name);
    const fresh = await tokensLeft(key, 'solo');
    answers.first = (_q, res) => json(res, errorBody);
    const r = await chat(key, 'solo', false);
    expect(r.status).toBe(502);
    expect(r.json.error).toMatchObject({ type: 'server_error', code: 'upstream_error' });
    expect(r.text).not.toContain(FIRST_KEY);
    expect(r.text).not.toContain('10.1.2.3');
    expect(r.text).not.toContain('Incorrect API key');
    expect(await charges(name)).toHaveLength(1); // the ordinary answer of tokensLeft only
    expect(await gw.balance(name)).toBe(before - (10 + 5 * 4));
    // The failed request's tokens went back: the window holds only the first answer's 15.
    expect(await tokensLeft(key, 'solo')).toBe(fresh - 15);
  });

  it('moves on to the next upstream, like a 5xx', async () => {
    const { key, account: name } = await account();
    answers.first = (_q, res) => json(res, { id: 'x', object: 'chat.completion', model: 'pair' });
    answers.second = (_q, res) => json(res, completion('from the second'));
    const r = await chat(key, 'pair', false);
    expect(r.status).toBe(200);
    expect(r.json.choices[0].message.content).toBe('from the second');
    expect(received).toEqual({ first: 1, second: 1 });
    const billed = await charges(name);
    expect(billed).toHaveLength(1);
    expect(billed[0]!.note).toMatch(/via second: 10 input \+ 5 output/);
  });

  it('an error object next to choices is a failure too', async () => {
    const { key, account: name } = await account();
    answers.first = (_q, res) => json(res, { ...completion('looks fine'), error: { message: 'upstream quota exhausted' } });
    const r = await chat(key, 'solo', false);
    expect(r.status).toBe(502);
    expect(r.text).not.toContain('quota exhausted');
    expect(await charges(name)).toHaveLength(0);
  });
});

describe('an error inside a choice', () => {
  // A failed choice quoting what the upstream saw, with its `error` key written plainly or with escapes.
  const failedChoice = `{"index":0,"message":{"role":"assistant","content":"partial"},"finish_reason":"error","ERR":{"message":"upstream at ${INTERNAL} refused ${FIRST_KEY}"}}`;
  const nested = (key: string) => `{"id":"chatcmpl-1","object":"chat.completion","choices":[${failedChoice.replace('ERR', key)}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`;

  for (const key of ['error', '\\u0065rror'])
    it(`not streamed (${key}): the upstream failing, as an error beside the choices is: 502, quoting none of it, nothing charged; another upstream answers`, async () => {
      const { key: apiKey, account: name } = await account();
      answers.first = (_q, res) => json(res, nested(key));
      const r = await chat(apiKey, 'solo', false);
      expect(r.status).toBe(502);
      expect(r.json.error).toMatchObject({ type: 'server_error', code: 'upstream_error' });
      expect(r.text).not.toMatch(/10\.1\.2\.3|refused|partial/);
      expect(r.text).not.toContain(FIRST_KEY);
      expect(await charges(name)).toHaveLength(0);

      answers.second = (_q, res) => json(res, completion('from the second'));
      const moved = await chat(apiKey, 'pair', false);
      expect(moved.status).toBe(200);
      expect(moved.json.choices[0].message.content).toBe('from the second');
      expect(moved.text).not.toContain('partial');
    });

  for (const key of ['error', '\\u0065rror'])
    it(`streamed (${key}): an error event, redacted, counting for nothing, not billed`, async () => {
      const { key: apiKey, account: name } = await account();
      const fresh = await tokensLeft(apiKey, 'solo');
      const event = `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"x"},"${key}":{"message":"upstream at ${INTERNAL} refused the key"}}]}\n\n`;
      answers.first = (_q, res) => sse(res, chunk({ role: 'assistant', content: '' }) + event + 'data: [DONE]\n\n');
      const r = await chat(apiKey, 'solo', true);
      expect(r.status).toBe(200);
      expect(r.text).toContain('refused the key');
      expect(r.text).not.toContain('10.1.2.3');
      expect(await charges(name)).toHaveLength(1); // the ordinary answer of tokensLeft only
      expect(await tokensLeft(apiKey, 'solo')).toBe(fresh - 15);
    });

  it('an `"error": null` in a choice is no error', async () => {
    const { key } = await account();
    answers.first = (_q, res) => json(res, { ...completion('fine'), choices: [{ index: 0, message: { role: 'assistant', content: 'fine' }, finish_reason: 'stop', error: null }] });
    const r = await chat(key, 'solo', false);
    expect(r.status).toBe(200);
    expect(r.json.choices[0].message.content).toBe('fine');
  });
});

describe('a non-streamed completion that quotes the upstream key', () => {
  for (const usage of [true, false])
    it(`has the key removed from the content (${usage ? 'with' : 'without'} reported usage)`, async () => {
      const { key } = await account();
      answers.first = (_q, res) => json(res, completion(`Your key is ${FIRST_KEY}, see ${INTERNAL}`, usage));
      const r = await chat(key, 'solo', false);
      expect(r.status).toBe(200);
      expect(r.text).not.toContain(FIRST_KEY);
      // Generated text keeps what is not the upstream's own credential.
      expect(r.json.choices[0].message.content).toBe(`Your key is [redacted], see ${INTERNAL}`);
    });
});

describe('a stream that generates nothing', () => {
  const cases: Array<[string, Answer]> = [
    ['its only event an error', (_q, res) => sse(res, `data: ${JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } })}\n\n`)],
    [
      'connection reset after the head',
      (req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        setTimeout(() => req.socket.destroy(), 20);
      },
    ],
    ['an empty body', (_q, res) => sse(res, '')],
    ['events without content and no usage', (_q, res) => sse(res, chunk({ role: 'assistant', content: '' }) + chunk({}).repeat(50) + 'data: [DONE]\n\n')],
  ];
  for (const [what, answer] of cases)
    it(`is not charged and gives its tokens back: ${what}`, async () => {
      const { key, account: name } = await account();
      const fresh = await tokensLeft(key, 'solo');
      answers.first = answer;
      const r = await chat(key, 'solo', true);
      expect(r.status).toBe(200);
      expect(await charges(name)).toHaveLength(1); // the ordinary answer of tokensLeft only
      expect(await tokensLeft(key, 'solo')).toBe(fresh - 15);
    });

  it('ends with an error event when the body was empty', async () => {
    const { key } = await account();
    answers.first = (_q, res) => sse(res, '');
    const r = await chat(key, 'solo', true);
    expect(r.status).toBe(200);
    expect(r.text).toMatch(/^data: \{"error":\{"type":"server_error","code":"upstream_error"/);
  });
});

describe('a stream billed without a usage chunk', () => {
  it('counts one output token per event that carries generated content, none for the others', async () => {
    const { key, account: name } = await account();
    const junk = chunk({}).repeat(200) + chunk({ content: null }).repeat(200);
    const tool = chunk({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] });
    answers.first = (_q, res) => sse(res, chunk({ role: 'assistant', content: '' }) + junk + chunk({ content: 'a' }) + tool + chunk({ content: 'b' }) + 'data: [DONE]\n\n');
    const r = await chat(key, 'solo', true);
    expect(r.status).toBe(200);
    const billed = await charges(name);
    expect(billed).toHaveLength(1);
    expect(billed[0]!.note).toMatch(/ \+ 3 output tokens \(estimated/);
  });

  it('still bills the content received before the connection broke', async () => {
    const { key, account: name } = await account();
    answers.first = (req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk({ content: 'a' }) + chunk({ content: 'b' }));
      setTimeout(() => req.socket.destroy(), 20);
    };
    const r = await chat(key, 'solo', true);
    expect(r.text).toContain('"code":"upstream_error"');
    const billed = await charges(name);
    expect(billed).toHaveLength(1);
    expect(billed[0]!.note).toMatch(/ \+ 2 output tokens \(estimated/);
  });
});

describe('a streamed error event written with escapes', () => {
  it('gets the full redaction all the same, and is not billed', async () => {
    const { key, account: name } = await account();
    const event = `data: {"\\u0065rror":{"message":"upstream at ${INTERNAL} refused the key"}}\n\n`;
    answers.first = (_q, res) => sse(res, chunk({ content: '' }) + event + 'data: [DONE]\n\n');
    const r = await chat(key, 'solo', true);
    expect(r.status).toBe(200);
    expect(r.text).toContain('refused the key');
    expect(r.text).not.toContain('10.1.2.3');
    expect(await charges(name)).toHaveLength(0);
  });
});

function sse(res: ServerResponse, body: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(body);
}
