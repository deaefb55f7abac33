import net from 'node:net';
import Fastify from 'fastify';
import { installLingeringClose } from '../../src/http/linger.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BodyBudget } from '../../src/http/body-budget.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Request bodies: the process-wide budget of body bytes in flight (503 overloaded beyond it) and the
 * lingering close that lets a client read a 413 while it is still uploading.
 */
const BODY_LIMIT = 1024 * 1024;
let gw: TestGateway;
let port: number;
let key: string;

/**
 * Requests whose head the gateway has read, and whether their answer has closed: a body's bytes are
 * taken from the budget as they arrive, and given back as the answer closes.
 */
const heads: { closed: boolean }[] = [];

/** The gateway's budget of body bytes, found as the one of its size the first time a body takes from it. */
let budget: BodyBudget | undefined;

beforeAll(async () => {
  const tryTake = BodyBudget.prototype.tryTake;
  vi.spyOn(BodyBudget.prototype, 'tryTake').mockImplementation(function (this: BodyBudget, bytes: number) {
    if (this.limit === 2 * BODY_LIMIT) budget = this;
    return tryTake.call(this, bytes);
  });
  gw = await startTestGateway({ server: { body_limit_bytes: BODY_LIMIT, max_inflight_body_bytes: 2 * BODY_LIMIT } });
  port = Number(new URL(gw.url).port);
  key = (await gw.newKey()).key;
  gw.app.server.on('request', (_req, res) => {
    const head = { closed: false };
    heads.push(head);
    res.once('close', () => (head.closed = true));
  });
});
afterAll(async () => {
  vi.restoreAllMocks();
  await gw?.close();
});

interface RawAnswer {
  status: number;
  json: any;
  headers: string;
  error?: string;
}

/** Parses the first HTTP answer in what a raw socket received. */
function parseAnswer(raw: string, error?: string): RawAnswer {
  const head = raw.slice(0, raw.indexOf('\r\n\r\n'));
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  const rest = raw.slice(head.length + 4);
  const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? rest.length);
  let json: any;
  try {
    json = JSON.parse(rest.slice(0, length));
  } catch {
    json = undefined;
  }
  return { status, json, headers: head.toLowerCase(), error };
}

/**
 * A naive client: sends the headers and the whole body (it does not look at answers while
 * uploading, and keeps sending after the server has finished its side), then reads what came back.
 */
function uploadThenRead(headers: string, bodyBytes: number, chunked = false): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let received = '';
    let error: string | undefined;
    s.on('data', (d) => (received += d.toString('latin1')));
    s.on('error', (e: NodeJS.ErrnoException) => (error ??= e.code ?? e.message));
    s.on('close', () => resolve(parseAnswer(received, error)));
    s.write(headers);
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    const pump = (): void => {
      while (sent < bodyBytes) {
        const n = Math.min(chunk.length, bodyBytes - sent);
        sent += n;
        const piece = chunked ? Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), chunk.subarray(0, n), Buffer.from('\r\n')]) : chunk.subarray(0, n);
        if (!s.write(piece)) return void s.once('drain', pump);
      }
      if (chunked) s.end('0\r\n\r\n');
      else s.end();
    };
    pump();
  });
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (const end = Date.now() + 10_000; !check(); await new Promise((r) => setTimeout(r, 5))) if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
}

/**
 * Two uploads that each send all but the last byte of a body of the whole limit and stall: the
 * budget (twice the limit) is held once the gateway has read what they sent (bytes are taken as
 * they arrive, not as declared).
 */
async function holdBudget(): Promise<[net.Socket, net.Socket]> {
  const n = heads.length;
  const a = await stalledUpload(BODY_LIMIT, BODY_LIMIT - 1);
  const b = await stalledUpload(BODY_LIMIT, BODY_LIMIT - 1);
  await until(() => heads.length >= n + 2 && budget!.inUse >= 2 * BODY_LIMIT - 2, 'the gateway to read both bodies');
  return [a, b];
}

/** Starts an upload that sends `sent` of `declared` bytes and then waits; returns the socket. */
async function stalledUpload(declared: number, sent: number): Promise<net.Socket> {
  const s = net.connect({ port, host: '127.0.0.1' });
  s.on('error', () => {});
  await new Promise((r) => s.once('connect', r));
  s.write(`POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`);
  s.write(Buffer.alloc(sent, 0x20));
  return s;
}

function expectOverloaded(r: { status: number; json: any }, retryAfter: string | null) {
  expect(r.status).toBe(503);
  expect(r.json).toEqual({ error: { type: 'server_error', code: 'overloaded', message: expect.any(String) } });
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
}

describe('a body over the limit', () => {
  it('is answered 413 in the spec shape, readable by a client still sending 30 MB (3 runs, no broken pipe)', async () => {
    for (let run = 0; run < 3; run++) {
      const size = 30 * 1024 * 1024;
      const r = await uploadThenRead(`POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`, size);
      expect(r.error, `run ${run}`).toBeUndefined();
      expect(r.status).toBe(413);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'body_too_large' });
    }
  }, 60_000);

  it('is answered 413 when sent chunked, past the limit, and the client reads it', async () => {
    const r = await uploadThenRead(`POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`, 3 * BODY_LIMIT, true);
    expect(r.error).toBeUndefined();
    expect(r.status).toBe(413);
    expect(r.json.error.code).toBe('body_too_large');
  }, 30_000);
});

describe('request bodies in flight are bounded', () => {
  it('sheds a request with 503 overloaded and Retry-After once the budget is held, and admits again once it is free', async () => {
    const n = heads.length;
    const [a, b] = await holdBudget();
    const shed = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'm', input: 'x' } });
    expectOverloaded(shed, shed.headers.get('retry-after'));
    // Requests without a body are never shed.
    expect((await call(gw, 'GET', '/health')).status).toBe(200);

    // A client that gives up hands its share back.
    a.destroy();
    await until(() => heads[n]!.closed || heads[n + 1]!.closed, 'an answer of the stalled uploads to close');
    const admitted = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'm', input: 'x' } });
    // Admitted: the unknown model is the next thing refused.
    expect(admitted.status).toBe(404);
    b.destroy();
  });

  it('cuts a chunked body with 503 when the budget runs out while it arrives', async () => {
    const n = heads.length;
    const [a, b] = await holdBudget();
    const r = await uploadThenRead(`POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`, 4096, true);
    expect(r.error).toBeUndefined();
    expectOverloaded(r, /retry-after: (\d+)/.exec(r.headers)?.[1] ?? null);
    a.destroy();
    b.destroy();
    await until(() => heads[n]!.closed && heads[n + 1]!.closed, 'the answers of the stalled uploads to close');
    const ok = await uploadThenRead(`POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`, 4096, true);
    // Admitted: a body of spaces is then refused as empty JSON.
    expect(ok.status).toBe(400);
  });

  it('refuses a configuration whose budget is below the body limit', async () => {
    await expect(startTestGateway({ server: { body_limit_bytes: 2048, max_inflight_body_bytes: 1024 } })).rejects.toThrow(/max_inflight_body_bytes/);
  });
});

describe('lingering close', () => {
  it('stops reading a refused body once its byte bound is passed (the client cannot keep the socket forever)', async () => {
    const app = Fastify({ bodyLimit: 1024 });
    installLingeringClose(app, { ms: 60_000, bytes: 256 * 1024 });
    app.post('/', async () => ({}));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const p = (app.server.address() as net.AddressInfo).port;
    const s = net.connect({ port: p, host: '127.0.0.1', allowHalfOpen: true });
    s.on('error', () => {});
    let received = '';
    s.on('data', (d) => (received += d));
    s.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${1024 ** 3}\r\n\r\n`);
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    let sent = 0;
    const closed = new Promise<void>((r) => s.once('close', () => r()));
    const pump = (): void => {
      while (!s.destroyed && s.write(chunk)) sent += chunk.length;
      if (!s.destroyed) s.once('drain', pump);
    };
    pump();
    await closed;
    expect(received).toMatch(/^HTTP\/1\.1 413/);
    // Closed by the server after about the bound (plus what sat in socket buffers), not after the gigabyte.
    expect(sent).toBeLessThan(64 * 1024 * 1024);
    await app.close();
  }, 30_000);
});
