import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Upstream answers the gateway reads whole count against one process-wide budget
 * (`server.max_inflight_answer_bytes`) and a per-answer cap (`server.max_answer_bytes`): beyond the
 * budget a request is shed with 503 `overloaded`, a larger answer is a 502 `upstream_answer_too_large`,
 * and every byte taken comes back on every path (sent, failed, abandoned by the client).
 */
const MiB = 1024 * 1024;
const CAP = 3 * MiB;
const BUDGET = 4 * MiB;

/**
 * Inputs per request: an embeddings call's answer may only be as large as its vectors can take
 * (embeddings/answer-bounds.ts), so megabytes are legitimate for a batch, not for one input. With 64
 * inputs that allowance is far above CAP, so CAP is the bound these tests meet.
 */
const INPUTS = Array.from({ length: 64 }, (_, i) => `hello ${i}`);
/** One fan-out call's answer: under the 64 KiB an answer may take unmetered when it is a request's only one. */
const SMALL_CALL_BYTES = 60 * 1024;

/** An OpenAI-shaped embeddings answer of about `bytes` (one vector per input), usage last as OpenAI writes it. */
function embeddingsAnswer(bytes: number, inputs = INPUTS.length): Buffer {
  const n = Math.floor(bytes / 10 / inputs);
  const vec = Array.from({ length: n }, (_, i) => (i % 7 === 0 ? '-0.123456' : '0.0123456')).join(',');
  const data = Array.from({ length: inputs }, (_, i) => `{"object":"embedding","index":${i},"embedding":[${vec}]}`).join(',');
  return Buffer.from(`{"object":"list","data":[${data}],"model":"emb","usage":{"prompt_tokens":2,"total_tokens":2}}`);
}

type Mode = 'full' | 'chunked' | 'stall' | 'reset';
let mode: Mode = 'full';
let size = 2 * MiB;
/** Answers held back by 'stall' mode: finishing them lets their requests complete. */
let stalled: { res: ServerResponse; rest: Buffer }[] = [];
let upstream: Server;
let gw: TestGateway;
let key: string;
let account: string;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      // One call of a fan-out (one input): a small answer of its own.
      const inputs = (JSON.parse(Buffer.concat(parts).toString()) as { input: string[] }).input.length;
      const body = inputs === 1 ? embeddingsAnswer(SMALL_CALL_BYTES, 1) : embeddingsAnswer(size);
      if (mode === 'chunked') {
        res.writeHead(200, { 'content-type': 'application/json' });
        for (let i = 0; i < body.length; i += 256 * 1024) res.write(body.subarray(i, i + 256 * 1024));
        return res.end();
      }
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
      if (mode === 'full') return res.end(body);
      res.write(body.subarray(0, 1000));
      if (mode === 'reset') return setTimeout(() => res.destroy(), 20);
      stalled.push({ res, rest: body.subarray(1000) });
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  gw = await startTestGateway({
    server: { max_answer_bytes: CAP, max_inflight_answer_bytes: BUDGET },
    upstreams: [
      { name: 'big', vendor: 'openai', base_url: base, api_key: 'sk-test-big', models: ['emb'], priority: 1, timeout_ms: 10_000 },
      // One input per call: a request fans out into as many calls as it has inputs.
      { name: 'fan', vendor: 'openai', base_url: base, api_key: 'sk-test-fan', models: ['emb-fan'], priority: 1, timeout_ms: 10_000, max_batch: 1 },
    ],
    models: {
      emb: { capabilities: ['embedding'], price: { per_million_input_tokens: 1 } },
      'emb-fan': { capabilities: ['embedding'], price: { per_million_input_tokens: 1 } },
    },
  });
  ({ key, account } = await gw.newKey(10));
});
afterAll(async () => {
  for (const s of stalled) s.res.destroy();
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
  await gw?.close();
});
beforeEach(() => {
  mode = 'full';
  size = 2 * MiB;
});

const budget = () => gw.services.executor.answers.budget!;
const embed = () =>
  fetch(`${gw.url}/v1/embeddings`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'emb', input: INPUTS }),
  });
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check(), what).toBe(true);
}

describe('upstream answers read whole are bounded', () => {
  it('an answer within the cap is served, and its bytes go back once the answer is sent', async () => {
    const r = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'emb', input: INPUTS } });
    expect(r.status, r.text).toBe(200);
    expect(r.json.data).toHaveLength(INPUTS.length);
    expect(r.json.data.length * r.json.data[0].embedding.length).toBeGreaterThan(100_000);
    await until(() => budget().inUse === 0, 'budget back to 0');
  });

  for (const m of ['full', 'chunked'] as const) {
    it(`an answer over server.max_answer_bytes (${m === 'full' ? 'declared' : 'chunked'}) is a 502 upstream_answer_too_large, nothing charged`, async () => {
      mode = m;
      size = CAP + MiB;
      const before = await gw.balance(account);
      const r = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'emb', input: INPUTS } });
      expect(r.status, r.text).toBe(502);
      expect(r.json.error).toMatchObject({ type: 'server_error', code: 'upstream_answer_too_large' });
      expect(await gw.balance(account)).toBe(before);
      await until(() => budget().inUse === 0, 'budget back to 0');
    });
  }

  it('beyond the process-wide budget a request is shed with 503 overloaded and Retry-After; the held one completes', async () => {
    mode = 'stall';
    const first = embed();
    // The first answer's declared length is taken as soon as its headers arrive.
    await until(() => budget().inUse >= 2 * MiB, 'first answer holding the budget');
    mode = 'full';
    const before = await gw.balance(account);
    const shed = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'emb', input: INPUTS } });
    expect(shed.status, shed.text).toBe(503);
    expect(shed.json.error).toMatchObject({ type: 'server_error', code: 'overloaded' });
    expect(shed.headers.get('retry-after')).toBe('1');
    expect(await gw.balance(account)).toBe(before);
    for (const s of stalled.splice(0)) s.res.end(s.rest);
    const r = await first;
    expect(r.status).toBe(200);
    await r.arrayBuffer();
    await until(() => budget().inUse === 0, 'budget back to 0');
  });

  it('a chunked answer is metered as it arrives and shed when the budget runs out', async () => {
    mode = 'stall';
    const first = embed();
    await until(() => budget().inUse >= 2 * MiB, 'first answer holding the budget');
    mode = 'chunked';
    size = 2.5 * MiB;
    const shed = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'emb', input: INPUTS } });
    expect(shed.status, shed.text).toBe(503);
    expect(shed.json.error.code).toBe('overloaded');
    expect(budget().inUse).toBeLessThanOrEqual(BUDGET);
    for (const s of stalled.splice(0)) s.res.end(s.rest);
    await (await first).arrayBuffer();
    await until(() => budget().inUse === 0, 'budget back to 0');
  });

  it('an upstream that resets mid-answer gives its bytes back (502)', async () => {
    mode = 'reset';
    const r = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'emb', input: INPUTS } });
    expect(r.status).toBe(502);
    await until(() => budget().inUse === 0, 'budget back to 0');
  });

  it('a client that leaves while its answer is held gives the bytes back', async () => {
    mode = 'stall';
    // A raw connection, closed outright: the client is gone, not just done reading.
    const body = JSON.stringify({ model: 'emb', input: INPUTS });
    const socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(`POST /v1/embeddings HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    await until(() => budget().inUse >= 2 * MiB, 'answer holding the budget');
    socket.destroy();
    await until(() => budget().inUse === 0, 'budget back to 0 after the client left');
    for (const s of stalled.splice(0)) s.res.destroy();
    expect((await call(gw, 'GET', '/health')).status).toBe(200);
  });

  it('the small answers of a fan-out count too: a request whose calls add up past the budget is shed, nothing charged', async () => {
    const fan = (n: number) => call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'emb-fan', input: INPUTS.concat(INPUTS).slice(0, n) } });
    // 40 calls of 60 KB (2.4 MB) fit the 4 MiB budget, and are held until the answer is sent.
    const fits = await fan(40);
    expect(fits.status, fits.text).toBe(200);
    expect(fits.json.data).toHaveLength(40);
    await until(() => budget().inUse === 0, 'budget back to 0');
    // 100 calls (6 MB) do not: each was a small answer, which alone goes unmetered.
    const before = await gw.balance(account);
    const shed = await fan(100);
    expect(shed.status, shed.text).toBe(503);
    expect(shed.json.error.code).toBe('overloaded');
    expect(await gw.balance(account)).toBe(before);
    await until(() => budget().inUse === 0, 'budget back to 0');
  });

  it('a client that hangs up while a large answer is sent in pieces ends nothing but its own request', async () => {
    // 40 vectors of ~6,000 values: rendered a few vectors a turn and written piece after piece.
    const body = JSON.stringify({ model: 'emb-fan', input: INPUTS.slice(0, 40) });
    const socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
    socket.on('error', () => undefined);
    let received = 0;
    const gone = new Promise<void>((resolve) => {
      socket.on('data', (chunk: Buffer) => {
        received += chunk.length;
        // The head and the first piece are in: leave in the middle of the answer.
        if (received > 64 * 1024) socket.destroy();
      });
      socket.on('close', () => resolve());
    });
    socket.write(`POST /v1/embeddings HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    await gone;
    expect(received).toBeGreaterThan(64 * 1024);
    await until(() => budget().inUse === 0, 'budget back to 0 after the client left');
    // The process and its other clients go on.
    expect((await call(gw, 'GET', '/health')).status).toBe(200);
    const again = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'emb-fan', input: INPUTS.slice(0, 40) } });
    expect(again.status).toBe(200);
    expect(again.json.data).toHaveLength(40);
  });
});
