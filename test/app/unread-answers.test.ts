import { createServer, type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * A client that never reads its answer cannot hold the answer budget (server.max_inflight_answer_bytes)
 * for as long as it stays connected: while the budget is short of room, an answer written whole that
 * no byte of has left the process for server.download_stall_ms is cut, its connection closed and its
 * hold given back; a reader that is slow but steady gets its whole answer, and while the budget has
 * room even one whose kernel buffers take nothing for longer than the stall. At small scale: answers
 * of 16 MiB (256 vectors, far more than the kernel's socket buffers take) against a budget of 24 MiB.
 */
const MiB = 1024 * 1024;
const ANSWER = 16 * MiB;
const STALL_MS = 600;
const INPUTS = Array.from({ length: 256 }, (_, i) => `hello ${i}`);

/** Values per vector: under the 8,192 the gateway accepts, about 64 KiB of JSON each. */
const VALUES = 6_553;
const VECTOR = Array.from({ length: VALUES }, (_, i) => (i % 7 === 0 ? '-0.123456' : '0.0123456')).join(',');

/** An OpenAI-shaped embeddings answer, one vector per input. */
function embeddingsAnswer(inputs: number): Buffer {
  const data = Array.from({ length: inputs }, (_, i) => `{"object":"embedding","index":${i},"embedding":[${VECTOR}]}`).join(',');
  return Buffer.from(`{"object":"list","data":[${data}],"model":"emb","usage":{"prompt_tokens":2,"total_tokens":2}}`);
}

let upstream: Server;
let gw: TestGateway;
/** The same, with an answer budget of 64 MiB: one answer of 16 MiB leaves it room. */
let roomy: TestGateway;
let key: string;
const sockets: net.Socket[] = [];

beforeAll(async () => {
  upstream = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const answer = embeddingsAnswer((JSON.parse(Buffer.concat(parts).toString()) as { input: string[] }).input.length);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(answer.length) }).end(answer);
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  gw = await startTestGateway({
    server: { max_answer_bytes: 20 * MiB, max_inflight_answer_bytes: 24 * MiB, download_stall_ms: STALL_MS, request_timeout_ms: 60_000 },
    upstreams: [{ name: 'big', vendor: 'openai', base_url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, api_key: 'sk-test-big', models: ['emb'], timeout_ms: 10_000 }],
    models: { emb: { capabilities: ['embedding'], price: { per_million_input_tokens: 1 } } },
  });
  ({ key } = await gw.newKey(10));
  roomy = await startTestGateway({
    server: { max_answer_bytes: 20 * MiB, max_inflight_answer_bytes: 64 * MiB, download_stall_ms: STALL_MS, request_timeout_ms: 60_000 },
    upstreams: [{ name: 'big', vendor: 'openai', base_url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, api_key: 'sk-test-big', models: ['emb'], timeout_ms: 10_000 }],
    models: { emb: { capabilities: ['embedding'], price: { per_million_input_tokens: 1 } } },
  });
}, 30_000);
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
});
afterAll(async () => {
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
  await gw?.close();
  await roomy?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const answerBudget = () => gw.services.executor.answers.budget!;

async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  for (const end = Date.now() + ms; !check(); await sleep(10)) if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
}

/** Sends one embeddings request over a raw connection and reads nothing of its answer. */
async function sendAndNeverRead(): Promise<net.Socket> {
  const socket = net.connect({ port: Number(new URL(gw.url).port), host: '127.0.0.1' });
  sockets.push(socket);
  socket.on('error', () => {});
  await new Promise((r) => socket.once('connect', r));
  const body = JSON.stringify({ model: 'emb', input: INPUTS });
  socket.write(`POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  // No 'data' listener and no read(): the socket stays paused and the kernel's buffers fill.
  socket.pause();
  return socket;
}

describe('a client that never reads its answer', () => {
  it('is cut after the stall, its hold on the answer budget goes back, and others are served again', async () => {
    const reader = await sendAndNeverRead();
    await until(() => answerBudget().inUse >= ANSWER, 'the answer to be held');
    // While it is held, another answer of the same size does not fit.
    const shed = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'emb', input: INPUTS } });
    expect(shed.status).toBe(503);
    expect(shed.json.error.code).toBe('overloaded');

    const heldAt = Date.now();
    await until(() => answerBudget().inUse === 0, 'the hold to be given back');
    expect(Date.now() - heldAt).toBeLessThan(STALL_MS * 4);
    // The connection was closed under the answer: reading now finds what the kernel held, then the end.
    let got = 0;
    reader.on('data', (c: Buffer) => (got += c.length));
    reader.resume();
    await new Promise((r) => reader.once('close', r));
    expect(got).toBeLessThan(ANSWER);
    const served = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'emb', input: INPUTS } });
    expect(served.status).toBe(200);
    expect(served.json.data).toHaveLength(INPUTS.length);
  }, 30_000);

  it('a reader that is slow but steady gets its whole answer', async () => {
    await readSlowly(gw, key, STALL_MS / 3);
    await until(() => answerBudget().inUse === 0, 'the hold to be given back');
  }, 60_000);
});

describe('a client that reads slowly while the answer budget has room', () => {
  it('is not cut, though the kernel takes nothing of its answer for longer than the stall', async () => {
    const { key: roomyKey } = await roomy.newKey(10);
    // Each pause fills the kernel's buffers and leaves them full for three stall periods, as a
    // steady 15 KB/s reader does (the kernel takes more only once a third of its buffer is free).
    await readSlowly(roomy, roomyKey, STALL_MS * 3);
    await until(() => roomy.services.executor.answers.budget!.inUse === 0, 'the hold to be given back');
  }, 60_000);
});

/**
 * Sends one embeddings request over a raw connection and takes its answer a few MiB at a time,
 * pausing `pauseMs` after each; expects the whole answer, on a connection left open.
 */
async function readSlowly(target: TestGateway, bearer: string, pauseMs: number): Promise<void> {
  const socket = net.connect({ port: Number(new URL(target.url).port), host: '127.0.0.1' });
  sockets.push(socket);
  await new Promise((r) => socket.once('connect', r));
  const body = JSON.stringify({ model: 'emb', input: INPUTS });
  socket.write(`POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${bearer}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  const chunks: Buffer[] = [];
  let size = 0;
  let closed = false;
  socket.on('close', () => (closed = true));
  // Long pauses come every 4 MiB, short ones every MiB: either way about the same time in all.
  const step = pauseMs > STALL_MS ? 4 * MiB : MiB;
  let pauseAt = step;
  let expected = Number.POSITIVE_INFINITY;
  const done = new Promise<void>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (expected === Number.POSITIVE_INFINITY) {
        const text = Buffer.concat(chunks).toString('latin1');
        const end = text.indexOf('\r\n\r\n');
        const length = /content-length: (\d+)/i.exec(text.slice(0, end))?.[1];
        if (end > 0 && length) expected = end + 4 + Number(length);
      }
      if (size >= expected) return resolve();
      if (size >= pauseAt) {
        pauseAt += step;
        socket.pause();
        setTimeout(() => socket.resume(), pauseMs);
      }
    });
    socket.on('close', () => resolve());
  });
  await done;
  expect(closed).toBe(false);
  const all = Buffer.concat(chunks);
  expect(all.subarray(0, 15).toString()).toBe('HTTP/1.1 200 OK');
  expect(size).toBe(expected);
  expect(JSON.parse(all.subarray(all.indexOf('\r\n\r\n') + 4).toString()).data).toHaveLength(INPUTS.length);
}
