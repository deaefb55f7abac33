import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import type { SqlStore } from '../../src/store/index.js';
import { enqueueVideoEvent } from '../../src/store/webhooks.js';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.js';
import { newSecret } from '../../src/webhooks/signing.js';
import { makeAccount, sqliteBackend, type Backend } from '../store/harness.js';
import { listenOnLoopback, shutReceiver } from './receiver.js';

/**
 * A receiver that has answered 2xx has taken the event, however slowly it then sends the rest of
 * its answer: the delivery is recorded, the body is dropped after a bounded read, and the event is
 * not sent again. A connection reset right after the status line is still a broken attempt.
 */
/**
 * The attempt timeout, well above the second the dispatcher spends reading an answer's body: an
 * attempt that read the dripping body until its deadline takes all of it, one that stopped after
 * that second takes little more than a second, also on a busy machine.
 */
const ATTEMPT_MS = 5_000;

describe('a 2xx answer whose body never ends', () => {
  let backend: Backend;
  const seen: Record<string, number> = {};
  const server = createServer((req, res) => {
    const mode = (req.url ?? '/').slice(1);
    seen[mode] = (seen[mode] ?? 0) + 1;
    req.resume();
    req.on('end', () => {
      if (mode === 'drip-200' || mode === 'drip-500') {
        res.writeHead(mode === 'drip-200' ? 200 : 500, { 'content-type': 'text/plain' });
        const t = setInterval(() => res.write('x'), 50);
        res.on('close', () => clearInterval(t));
        return;
      }
      if (mode === 'reset-200') {
        res.writeHead(200, { 'content-length': '100' });
        res.write('partial');
        setTimeout(() => req.socket.resetAndDestroy(), 10);
        return;
      }
      res.writeHead(200).end();
    });
  });
  let base = '';
  beforeAll(async () => {
    backend = sqliteBackend();
    base = await listenOnLoopback(server);
  });
  afterAll(async () => {
    await backend.dispose();
    await shutReceiver(server);
  });

  async function run(store: SqlStore, accountId: string, settle: (row: { state: string }[]) => boolean) {
    const d = new WebhookDispatcher(
      store,
      systemClock,
      { intervalMs: 0, concurrency: 8, timeoutMs: ATTEMPT_MS, leaseMs: 60_000, retryBaseMs: 100, maxDelayMs: 100, maxAttempts: 2, allowPrivateNetworks: true },
      { warn: () => undefined },
    );
    try {
      const end = Date.now() + 3 * ATTEMPT_MS;
      for (;;) {
        await d.tick();
        if (settle(await store.listOutbox({ accountId, limit: 10 }))) break;
        if (Date.now() > end) throw new Error('did not settle');
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await d.stop();
    }
  }

  it('is delivered once, without waiting for the whole attempt timeout; a reset or a non-2xx is still retried', async () => {
    const { store } = await backend.fresh();
    const account = await makeAccount(store);
    for (const mode of ['drip-200', 'drip-500', 'reset-200'])
      await store.createWebhookEndpoint({ id: `we_${randomUUID().replace(/-/g, '')}`, accountId: account.id, url: `${base}/${mode}`, events: ['video.completed'], secret: newSecret(), createdAt: Date.now() });
    await enqueueVideoEvent(store.driver, { accountId: account.id, type: 'video.completed', videoId: 'vid_drip', webhookUrl: null, now: Date.now() });
    await run(store, account.id, (rows) => rows.length === 3 && rows.every((r) => r.state !== 'pending'));

    const rows = await store.listOutbox({ accountId: account.id, limit: 10 });
    const attempts = await store.listDeliveryAttempts({ limit: 20 });
    const of = (mode: string) => {
      const row = rows.find((r) => r.url.endsWith(`/${mode}`))!;
      return { row, attempts: attempts.filter((a) => a.outboxId === row.id).reverse() };
    };

    const drip = of('drip-200');
    expect(drip.row).toMatchObject({ state: 'delivered', attempts: 1 });
    expect(drip.attempts).toHaveLength(1);
    expect(drip.attempts[0]).toMatchObject({ status: 200, error: null });
    expect(drip.attempts[0]!.latencyMs).toBeLessThan(ATTEMPT_MS - 2_000);
    expect(seen['drip-200']).toBe(1);

    // Not acknowledged: retried up to max_attempts, whatever its body does.
    expect(of('drip-500').row).toMatchObject({ state: 'failed', attempts: 2 });
    expect(seen['drip-500']).toBe(2);
    // Broken off after the status line: the receiver may not have taken it, so it is retried.
    const reset = of('reset-200');
    expect(reset.attempts[0]).toMatchObject({ status: 200, error: 'the connection broke before the answer ended' });
    expect(seen['reset-200']).toBe(2);
  });
});
