import Fastify, { type FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { installRequestLifecycle } from '../../src/http/lifecycle.js';

/**
 * Request deadlines follow elapsed time, not the wall clock: an NTP step forward must not time out
 * every request in flight, and a step back must not let a hung request outlive its timeout.
 */
const realNow = Date.now;
let app: FastifyInstance | undefined;
afterEach(async () => {
  Date.now = realNow;
  await app?.close();
  app = undefined;
});

async function gateway(timeoutMs: number): Promise<string> {
  app = Fastify();
  installRequestLifecycle(app, timeoutMs);
  app.get('/slow', async () => {
    await new Promise((r) => setTimeout(r, 300));
    return { ok: true };
  });
  app.get('/hang', () => new Promise(() => undefined));
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

describe('request deadlines and the wall clock', () => {
  it('a wall clock stepped forward does not time out a request within its deadline', async () => {
    const url = await gateway(5_000);
    const status = fetch(`${url}/slow`).then((r) => r.status);
    await new Promise((r) => setTimeout(r, 50));
    Date.now = () => realNow() + 60_000;
    expect(await status).toBe(200);
  });

  it('a wall clock stepped back does not stretch the deadline', async () => {
    const url = await gateway(300);
    const started = performance.now();
    const status = fetch(`${url}/hang`).then((r) => r.status);
    await new Promise((r) => setTimeout(r, 50));
    Date.now = () => realNow() - 60_000;
    expect(await status).toBe(408);
    // The deadline plus at most a sweep period or two (the sweep runs every timeout / 4).
    expect(performance.now() - started).toBeLessThan(3_000);
  });
});
