import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BodyBudget } from '../../src/http/body-budget.js';
import { Executor } from '../../src/http/executor.js';
import { TransportError } from '../../src/http/types.js';

/**
 * The executor's whole-answer call (`sendRaw`, undici's handler API): answers, aborts at every
 * stage, and bytes taken from the answer budget going back when the answer is not read to its end.
 */
describe('sendRaw through the dispatch handler', () => {
  let server: Server;
  let url: string;
  const big = Buffer.alloc(200_000, 0x61);

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      if (req.url === '/ok') {
        res.writeHead(201, { 'content-type': 'application/json', 'x-up': 'a' });
        res.end('{"ok":true}');
      } else if (req.url === '/half') {
        // Half the declared body, then silence: the client's abort is what ends it.
        res.writeHead(200, { 'content-length': String(big.length) });
        res.write(big.subarray(0, big.length / 2));
      } else if (req.url === '/slow') {
        setTimeout(() => res.end('late'), 5_000).unref();
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('returns status, lower-cased headers and the body', async () => {
    const ex = new Executor();
    const res = await ex.sendRaw({ method: 'POST', url: `${url}/ok`, headers: {}, body: { a: 1 } }, 5_000);
    expect(res.status).toBe(201);
    expect(res.headers['x-up']).toBe('a');
    expect(res.raw.toString()).toBe('{"ok":true}');
    await ex.close();
  });

  it('a signal already aborted fails at once, as aborted', async () => {
    const ex = new Executor();
    const err = await ex.sendRaw({ method: 'GET', url: `${url}/ok`, headers: {} }, 5_000, AbortSignal.abort()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransportError);
    expect((err as TransportError).reason).toBe('aborted');
    await ex.close();
  });

  it('an abort before the headers ends the call as aborted', async () => {
    const ex = new Executor();
    const ac = new AbortController();
    const pending = ex.sendRaw({ method: 'GET', url: `${url}/slow`, headers: {} }, 10_000, ac.signal).catch((e: unknown) => e);
    setTimeout(() => ac.abort(), 50);
    const err = await pending;
    expect((err as TransportError).reason).toBe('aborted');
    await ex.close();
  });

  it('an abort mid-body ends the call and gives the bytes taken from the budget back', async () => {
    const budget = new BodyBudget(10_000_000);
    const ex = new Executor({ answers: { budget } });
    const ac = new AbortController();
    const pending = ex.sendRaw({ method: 'GET', url: `${url}/half`, headers: {} }, 10_000, ac.signal).catch((e: unknown) => e);
    // The declared length is taken once the headers are in.
    while (budget.inUse === 0) await new Promise((r) => setTimeout(r, 5));
    ac.abort();
    const err = await pending;
    expect((err as TransportError).reason).toBe('aborted');
    expect(budget.inUse).toBe(0);
    await ex.close();
  });

  it('an answer the budget cannot hold is refused with 503 overloaded', async () => {
    const budget = new BodyBudget(100_000);
    const ex = new Executor({ answers: { budget } });
    const err = await ex.sendRaw({ method: 'GET', url: `${url}/half`, headers: {} }, 10_000).catch((e: unknown) => e);
    expect((err as { status?: number }).status).toBe(503);
    expect(budget.inUse).toBe(0);
    await ex.close();
  });
});
