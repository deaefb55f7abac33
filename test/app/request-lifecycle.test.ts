import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { holdOf } from '../../src/http/answer-budget.js';
import { BodyBudget } from '../../src/http/body-budget.js';
import { toAbortSignal, type CallSignal } from '../../src/http/call-signal.js';
import { installRequestLifecycle } from '../../src/http/lifecycle.js';

const apps: FastifyInstance[] = [];
afterEach(async () => {
  while (apps.length) await apps.pop()!.close();
});

async function listen(timeoutMs: number, register: (app: FastifyInstance) => void): Promise<string> {
  const app = Fastify();
  apps.push(app);
  installRequestLifecycle(app, timeoutMs);
  register(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

const until = async (check: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
};

describe('the request lifecycle (signal and hold made on first use)', () => {
  it('a route that never reads the signal is answered, and one that reads it gets a live signal with a hold', async () => {
    const url = await listen(60_000, (app) => {
      app.get('/plain', async () => ({ ok: true }));
      app.get('/signal', async (req) => ({ aborted: req.abortSignal.aborted, held: holdOf(req.abortSignal) !== undefined, same: req.abortSignal === req.abortSignal }));
    });
    expect(await (await fetch(`${url}/plain`)).json()).toEqual({ ok: true });
    expect(await (await fetch(`${url}/signal`)).json()).toEqual({ aborted: false, held: true, same: true });
  });

  it('a signal first read after the client left starts aborted', async () => {
    let lateSignal: AbortSignal | undefined;
    let entered = false;
    let clientGone!: () => void;
    const gone = new Promise<void>((r) => (clientGone = r));
    const url = await listen(60_000, (app) => {
      app.get('/slow', async (req, reply) => {
        entered = true;
        req.raw.socket.once('close', () => clientGone());
        await gone;
        await new Promise((r) => setImmediate(r));
        lateSignal = req.abortSignal;
        return reply.send({ late: true });
      });
    });
    const r = httpRequest(`${url}/slow`);
    r.on('error', () => {});
    r.end();
    // The client leaves once the route runs (and listens for it), however long the request takes to get there.
    await until(() => entered);
    r.destroy();
    await until(() => lateSignal !== undefined);
    expect(lateSignal?.aborted).toBe(true);
  });

  it('a request past its deadline gets a 408 and its signal aborts, unless it committed', async () => {
    let signal: AbortSignal | undefined;
    const url = await listen(40, (app) => {
      app.get('/stuck', async (req) => {
        signal = req.abortSignal;
        await new Promise((r) => setTimeout(r, 400));
        return { late: true };
      });
      app.get('/committed', async (req) => {
        req.commit();
        await new Promise((r) => setTimeout(r, 200));
        return { done: true };
      });
    });
    const stuck = await fetch(`${url}/stuck`);
    expect(stuck.status).toBe(408);
    expect(signal?.aborted).toBe(true);
    const committed = await fetch(`${url}/committed`);
    expect(committed.status).toBe(200);
    expect(await committed.json()).toEqual({ done: true });
  });

  it('the call signal carries the same hold as the abort signal, and a read of either leaves the other consistent', async () => {
    const url = await listen(60_000, (app) => {
      app.get('/call', async (req) => {
        const hold = holdOf(req.callSignal);
        return { aborted: req.callSignal.aborted, held: hold !== undefined, same: hold === holdOf(req.abortSignal) };
      });
    });
    expect(await (await fetch(`${url}/call`)).json()).toEqual({ aborted: false, held: true, same: true });
  });

  it('a client that leaves runs the call signal listeners once, aborts the abort signal too, and releases the hold', async () => {
    const budget = new BodyBudget(1_000);
    let calls = 0;
    let removedCalls = 0;
    let signal: AbortSignal | undefined;
    let call: CallSignal | undefined;
    let clientGone!: () => void;
    const gone = new Promise<void>((r) => (clientGone = r));
    const url = await listen(60_000, (app) => {
      app.get('/wait', async (req, reply) => {
        call = req.callSignal;
        signal = req.abortSignal;
        expect(budget.tryTake(400)).toBe(true);
        expect(holdOf(call)!.keep(budget, 400)).toBe(true);
        call.addEventListener('abort', () => calls++);
        const removed = (): void => void removedCalls++;
        call.addEventListener('abort', removed);
        call.removeEventListener('abort', removed);
        req.raw.socket.once('close', () => clientGone());
        await gone;
        return reply.send({ late: true });
      });
    });
    const r = httpRequest(`${url}/wait`);
    r.on('error', () => {});
    r.end();
    await until(() => call !== undefined);
    r.destroy();
    await until(() => calls > 0);
    expect(call!.aborted).toBe(true);
    expect(signal!.aborted).toBe(true);
    expect(calls).toBe(1);
    expect(removedCalls).toBe(0);
    expect(budget.inUse).toBe(0);
    // A listener added after the abort is never run: callers check `aborted` first.
    call!.addEventListener('abort', () => calls++);
    expect(calls).toBe(1);
    // The hold was released: bytes offered later go back to their budget by the caller.
    expect(holdOf(call)!.keep(budget, 1)).toBe(false);
  });

  it('toAbortSignal links a real signal to the call signal, or hands back an AbortSignal as it is', async () => {
    const ac = new AbortController();
    expect(toAbortSignal(ac.signal)).toBe(ac.signal);
    let linked: AbortSignal | undefined;
    const url = await listen(40, (app) => {
      app.get('/stuck', async (req) => {
        linked = toAbortSignal(req.callSignal);
        await new Promise((r) => setTimeout(r, 300));
        return { late: true };
      });
    });
    expect((await fetch(`${url}/stuck`)).status).toBe(408);
    expect(linked?.aborted).toBe(true);
  });
});
