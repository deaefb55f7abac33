import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { BodyBudget } from '../../src/http/body-budget.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Slow request bodies cannot hold the body budget (server.max_inflight_body_bytes) from the others:
 * a body takes what has arrived, not what its Content-Length declares; the console sign-in takes a
 * few KiB at most; bodies whose caller is not known share a small part of the budget; and a body
 * that stops arriving is answered 408 and its connection closed (server.body_stall_ms). Every attack
 * is made over raw sockets, at the scale of a budget of twice a 1 MiB body limit.
 */
const BODY_LIMIT = 1024 * 1024;
const BUDGET = 2 * BODY_LIMIT;
const STALL_MS = 600;
let gw: TestGateway;
let port: number;
let key: string;
/** The gateway's budget, found as the one of its size the first time a body takes from it. */
let budget: BodyBudget | undefined;
const sockets: net.Socket[] = [];
const timers: NodeJS.Timeout[] = [];

beforeAll(async () => {
  const tryTake = BodyBudget.prototype.tryTake;
  vi.spyOn(BodyBudget.prototype, 'tryTake').mockImplementation(function (this: BodyBudget, bytes: number) {
    if (this.limit === BUDGET) budget = this;
    return tryTake.call(this, bytes);
  });
  gw = await startTestGateway({ server: { body_limit_bytes: BODY_LIMIT, max_inflight_body_bytes: BUDGET, body_stall_ms: STALL_MS, request_timeout_ms: 60_000 } });
  port = Number(new URL(gw.url).port);
  key = (await gw.newKey()).key;
});
afterEach(() => {
  for (const t of timers.splice(0)) clearInterval(t);
  for (const s of sockets.splice(0)) s.destroy();
});
afterAll(async () => {
  vi.restoreAllMocks();
  await gw?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean, what: string, ms = 5_000): Promise<void> {
  for (const end = Date.now() + ms; !check(); await sleep(10)) if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
}

interface Slow {
  socket: net.Socket;
  /** What the gateway answered so far. */
  received: () => string;
  closed: () => boolean;
}

/**
 * Opens a connection, sends `head`, then `first` bytes of the body at once and, when `tickMs` is
 * given, one more byte every `tickMs` (as the reproduced attack did, a byte every few seconds).
 */
async function slowBody(head: string, first: number, tickMs?: number): Promise<Slow> {
  const socket = net.connect({ port, host: '127.0.0.1' });
  sockets.push(socket);
  socket.on('error', () => {});
  let received = '';
  let closed = false;
  socket.on('data', (d) => (received += d.toString('latin1')));
  socket.on('close', () => (closed = true));
  await new Promise((r) => socket.once('connect', r));
  socket.write(head);
  if (first > 0) socket.write(Buffer.alloc(first, 0x20));
  if (tickMs !== undefined) timers.push(setInterval(() => !socket.destroyed && socket.write(' '), tickMs));
  return { socket, received: () => received, closed: () => closed };
}

const sessionHead = (length: number) =>
  `POST /console/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
const embeddingsHead = (length: number) =>
  `POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

/** A keyed request with a body; admitted past the budget when it gets to the model lookup (404 for a model that does not exist). */
async function expectAdmitted(): Promise<void> {
  const r = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'no-such-model', input: 'x' } });
  expect(r.status, r.text).toBe(404);
  expect(r.json.error.code).toBe('model_not_found');
}

describe('slow request bodies and the body budget', () => {
  it('unauthenticated sign-ins declaring large bodies and trickling them hold nothing: others are served', async () => {
    // Thirteen declared 10 MiB against a 128 MiB budget; here three declare the whole limit against twice it.
    const attackers = await Promise.all([0, 1, 2].map(() => slowBody(sessionHead(BODY_LIMIT), 10, 100)));
    await sleep(300);
    await expectAdmitted();
    expect(budget?.inUse ?? 0).toBeLessThan(64 * 1024);
    // The sign-in takes a few KiB: larger declared bodies are refused unread, naming the route's limit.
    await until(() => attackers.every((a) => a.received().startsWith('HTTP/1.1 413')), 'the sign-ins to be refused');
    expect(attackers[0]!.received()).toContain('"code":"body_too_large"');
    expect(attackers[0]!.received()).toContain('4096 bytes');
  });

  it('a key holder declaring large bodies and trickling them holds only what has arrived: others are served', async () => {
    const attackers = await Promise.all([0, 1, 2].map(() => slowBody(embeddingsHead(BODY_LIMIT), 10, 100)));
    await sleep(300);
    await expectAdmitted();
    expect(budget!.inUse).toBeLessThan(1024);
    for (const a of attackers) expect(a.received()).toBe('');
  });

  it('a key holder declaring many small bodies and trickling them holds at most its share of up-front takes: others are served', async () => {
    // Small keyed bodies take their declared length on arrival; forty declaring 64 KiB each (2.5 MiB against the
    // 2 MiB budget) took all of it, and every body was shed with 503 until the deadline.
    const small = 64 * 1024;
    const attackers: Slow[] = [];
    for (let i = 0; i < 40; i++) attackers.push(await slowBody(embeddingsHead(small), 10, 100));
    await sleep(300);
    await expectAdmitted();
    // An account's up-front takes hold an eighth of the budget at most; the rest hold the bytes they sent.
    expect(budget!.inUse).toBeLessThanOrEqual(BUDGET / 8 + 40 * 64);
    for (const a of attackers) expect(a.received()).toBe('');
  });

  it('a body that stops arriving is answered 408 and its connection closed, and what it held goes back', async () => {
    const started = Date.now();
    const stalled = await slowBody(embeddingsHead(BODY_LIMIT), BODY_LIMIT - 1);
    await until(() => budget!.inUse >= BODY_LIMIT - 1, 'the body to be taken');
    await until(() => stalled.closed(), 'the stalled connection to be closed', 10_000);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(STALL_MS);
    expect(elapsed).toBeLessThan(5_000);
    const answer = stalled.received();
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
      error: { type: 'request_timeout', code: 'request_timeout', message: expect.stringContaining('No byte of the request body arrived') },
    });
    await until(() => budget!.inUse === 0, 'the budget to be given back');
  });

  it('a body that keeps arriving, however slowly, is not cut by the stall timeout', async () => {
    const body = JSON.stringify({ model: 'no-such-model', input: 'x' });
    const s = await slowBody(embeddingsHead(body.length), 0);
    for (const ch of body) {
      s.socket.write(ch);
      await sleep(STALL_MS / 6);
    }
    await until(() => s.received().includes('\r\n\r\n{'), 'the answer');
    expect(s.received()).toMatch(/^HTTP\/1\.1 404/);
  });

  it('bodies whose caller is not known hold at most a small share of the budget: one address is cut at its share', async () => {
    // No route matches, so no credential is asked for; the body is read under the server's limit.
    const head = `POST /no-such-route HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${BODY_LIMIT}\r\n\r\n`;
    const a = await slowBody(head, BODY_LIMIT - 1);
    const b = await slowBody(head, BODY_LIMIT - 1);
    await until(() => a.received().includes('\r\n\r\n{') && b.received().includes('\r\n\r\n{'), 'both to be shed');
    for (const s of [a, b]) {
      expect(s.received()).toMatch(/^HTTP\/1\.1 503/);
      expect(s.received()).toContain('"code":"overloaded"');
    }
    // A sixteenth of the budget, at least 64 KiB, for all of them; a quarter of that, at least 64 KiB, per address.
    expect(budget!.inUse).toBeLessThanOrEqual(64 * 1024);
    await expectAdmitted();
  });
});
