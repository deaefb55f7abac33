import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { guardedAgent, unsafeTargetReason } from '../../src/http/guarded-agent.js';
import { checkJobWebhook } from '../../src/webhooks/job-target.js';

/**
 * Names a client chooses (a webhook target, a gateway_webhook_url, a media URL) are resolved with
 * getaddrinfo on libuv's thread pool (4 threads by default), shared with every upstream's own lookups.
 * A name whose DNS servers never answer holds a thread for the resolver's whole timeout. Here the
 * system resolver is replaced: names under `.hang.test` never answer (until released), others answer
 * at once with `ADDRESS`.
 */
const dns = vi.hoisted(() => {
  type Answer = (err: Error | null, list: Array<{ address: string; family: number }>) => void;
  const state = { started: [] as string[], hung: [] as Answer[], address: '93.184.216.34' };
  const lookup = (host: string, answer: Answer) => {
    state.started.push(host);
    if (host.endsWith('.hang.test')) state.hung.push(answer);
    else setImmediate(() => answer(null, [{ address: state.address, family: 4 }]));
  };
  return { state, lookup };
});

vi.mock('node:dns', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:dns')>();
  const lookup = (host: string, opts: { all?: boolean } | ((...a: unknown[]) => void), cb?: (...a: unknown[]) => void) => {
    const done = (typeof opts === 'function' ? opts : cb)!;
    const all = typeof opts === 'object' && opts.all === true;
    dns.lookup(host, (err, list) => (err ? done(err) : all ? done(null, list) : done(null, list[0]!.address, list[0]!.family)));
  };
  return { ...real, default: { ...real, lookup }, lookup };
});
vi.mock('node:dns/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:dns/promises')>();
  const lookup = (host: string, opts?: { all?: boolean }) =>
    new Promise((resolve, reject) => dns.lookup(host, (err, list) => (err ? reject(err) : resolve(opts?.all ? list : list[0]))));
  return { ...real, default: { ...real, lookup }, lookup };
});

/** Half of libuv's default pool of 4. */
const MOST_IN_FLIGHT = 2;
const hangingStarted = () => dns.state.started.filter((h) => h.endsWith('.hang.test')).length;

/** The resolver finally gives up on every hanging name (as getaddrinfo does after its timeout). */
function releaseHung(): void {
  for (const answer of dns.state.hung.splice(0)) answer(Object.assign(new Error('getaddrinfo EAI_AGAIN'), { code: 'EAI_AGAIN' }), []);
}

afterEach(() => {
  vi.useRealTimers();
  releaseHung();
  dns.state.started.length = 0;
  dns.state.address = '93.184.216.34';
});

describe('lookups of client-chosen names', () => {
  it('names that never resolve take at most half the lookup threads, and every check ends by its deadline', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const outcomes: Array<string | undefined> = [];
    const checks = [...Array.from({ length: 6 }, (_, i) => `http://h${i}.hang.test/hook`), 'http://ok.test/hook'].map((url) =>
      unsafeTargetReason(url, false).then(
        (reason) => void outcomes.push(reason ?? 'allowed'),
        (e: { status?: number; code?: string }) => void outcomes.push(`${e.status} ${e.code}`),
      ),
    );
    await new Promise((r) => setImmediate(r));
    expect(hangingStarted()).toBe(MOST_IN_FLIGHT);
    await vi.advanceTimersByTimeAsync(5_000);
    await Promise.all(checks);
    // The two whose lookups ran had no answer: the name does not resolve. The others never got a
    // lookup slot: the gateway is busy, a 503 to retry, not the client's URL at fault.
    expect(outcomes.sort()).toEqual([...Array(5).fill('503 overloaded'), 'does not resolve', 'does not resolve']);
    expect(hangingStarted()).toBe(MOST_IN_FLIGHT);

    // Until the resolver gives up, its threads stay taken; then lookups run again.
    releaseHung();
    vi.useRealTimers();
    expect(await unsafeTargetReason('http://ok.test/hook', false)).toBeUndefined();
    dns.state.address = '10.0.0.7';
    expect(await unsafeTargetReason('http://private.test/hook', false)).toBe('resolves to a private or local address');
  });

  describe('at delivery (the guarded agent)', () => {
    const server = createServer((_req, res) => res.end('ok'));
    let port = 0;
    beforeAll(async () => {
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      port = (server.address() as AddressInfo).port;
    });
    afterAll(async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    });

    it('connections to names that never resolve fail at the connect deadline and hold at most half the threads', async () => {
      const agent = guardedAgent({ allowPrivateNetworks: true, connectTimeoutMs: 200 });
      try {
        const attempts = Array.from({ length: 5 }, (_, i) =>
          agent.request({ origin: `http://d${i}.hang.test:${port}`, path: '/', method: 'POST', body: '{}', signal: AbortSignal.timeout(2_000) }).then(
            () => 'answered',
            (e: { code?: string; name?: string }) => e.code ?? e.name ?? 'failed',
          ),
        );
        const results = await Promise.all(attempts);
        expect(results.every((r) => r !== 'answered' && r !== 'AbortError' && r !== 'TimeoutError')).toBe(true);
        expect(hangingStarted()).toBe(MOST_IN_FLIGHT);
        releaseHung();
        dns.state.address = '127.0.0.1';
        const res = await agent.request({ origin: `http://receiver.test:${port}`, path: '/', method: 'GET', signal: AbortSignal.timeout(2_000) });
        expect([res.statusCode, await res.body.text()]).toEqual([200, 'ok']);
      } finally {
        await agent.close();
      }
    });
  });

  it('a job naming a target for an account without an endpoint is refused before its name is resolved', async () => {
    const store = { listWebhookEndpoints: async () => [] };
    await expect(checkJobWebhook(store, 'acct', 'http://never-looked-up.test/hook', false)).rejects.toMatchObject({ status: 400, code: 'invalid_webhook_url' });
    expect(dns.state.started).toEqual([]);
  });
});
