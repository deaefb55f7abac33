import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import type { Store } from '../../src/store/types.js';
import { enqueueVideoEvent } from '../../src/store/webhooks.js';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.js';
import { newSecret } from '../../src/webhooks/signing.js';
import { makeAccount, sqliteBackend, type Backend } from '../store/harness.js';
import { listenOnLoopback, shutReceiver } from './receiver.js';

/**
 * stop() arriving while a tick is claiming rows: nothing may start after it (the agent is being
 * closed, so an attempt would only burn one of the row's attempts), and rows the tick already
 * leased are handed back at once, with no attempt counted.
 */
describe('stopping the dispatcher in the middle of a claim', () => {
  let backend: Backend;
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    req.resume();
    req.on('end', () => res.writeHead(200).end());
  });
  let url = '';
  beforeAll(async () => {
    backend = sqliteBackend();
    url = `${await listenOnLoopback(server)}/hook`;
  });
  afterAll(async () => {
    await backend.dispose();
    await shutReceiver(server);
  });

  it('starts nothing after stop(), spends no attempt, and releases the rows it had claimed', async () => {
    const { store } = await backend.fresh();
    const account = await makeAccount(store);
    await store.createWebhookEndpoint({ id: `we_${randomUUID().replace(/-/g, '')}`, accountId: account.id, url, events: ['video.completed'], secret: newSecret(), createdAt: Date.now() });
    for (let i = 0; i < 3; i++) await enqueueVideoEvent(store.driver, { accountId: account.id, type: 'video.completed', videoId: `vid_${i}`, webhookUrl: null, now: Date.now() });

    // stop() is called the moment the store hands rows over, before the dispatcher has used them.
    let stopping: Promise<void> | undefined;
    let d!: WebhookDispatcher;
    const hooked: Store = Object.create(store);
    hooked.leaseDelivery = async (...args: Parameters<Store['leaseDelivery']>) => {
      const got = await store.leaseDelivery(...args);
      stopping ??= d.stop();
      return got;
    };
    const warns: string[] = [];
    d = new WebhookDispatcher(
      hooked,
      systemClock,
      { intervalMs: 0, concurrency: 8, timeoutMs: 1_000, leaseMs: 60_000, retryBaseMs: 60_000, maxDelayMs: 60_000, maxAttempts: 1, allowPrivateNetworks: true },
      { warn: (o, m) => warns.push(`${m} ${JSON.stringify(o)}`) },
    );
    const tick = d.tick();
    await tick;
    expect(stopping).toBeDefined();
    await stopping;
    await new Promise((r) => setTimeout(r, 300));

    expect(hits).toBe(0);
    expect(await store.listDeliveryAttempts({ limit: 10 })).toEqual([]);
    const rows = await store.listOutbox({ accountId: account.id, limit: 10 });
    expect(rows).toHaveLength(3);
    for (const r of rows) expect(r).toMatchObject({ state: 'pending', attempts: 0, leaseUntil: null });
    expect(warns).toEqual([]);

    // A dispatcher started afterwards (the next process) delivers them at once: nothing waits for a lease.
    const next = new WebhookDispatcher(
      store,
      systemClock,
      { intervalMs: 0, concurrency: 8, timeoutMs: 1_000, leaseMs: 60_000, retryBaseMs: 60_000, maxDelayMs: 60_000, maxAttempts: 1, allowPrivateNetworks: true },
      { warn: () => undefined },
    );
    try {
      const end = Date.now() + 5_000;
      while ((await store.listOutbox({ accountId: account.id, limit: 10 })).some((r) => r.state !== 'delivered')) {
        if (Date.now() > end) throw new Error('not delivered');
        await next.tick();
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await next.stop();
    }
    expect(hits).toBe(3);
  });

  it('a tick after stop() claims nothing', async () => {
    const { store } = await backend.fresh();
    const account = await makeAccount(store);
    await store.createWebhookEndpoint({ id: `we_${randomUUID().replace(/-/g, '')}`, accountId: account.id, url, events: ['video.completed'], secret: newSecret(), createdAt: Date.now() });
    await enqueueVideoEvent(store.driver, { accountId: account.id, type: 'video.completed', videoId: 'vid_after', webhookUrl: null, now: Date.now() });
    const d = new WebhookDispatcher(
      store,
      systemClock,
      { intervalMs: 0, concurrency: 8, timeoutMs: 1_000, leaseMs: 60_000, retryBaseMs: 60_000, maxDelayMs: 60_000, maxAttempts: 1, allowPrivateNetworks: true },
      { warn: () => undefined },
    );
    await d.stop();
    await d.tick();
    await new Promise((r) => setTimeout(r, 200));
    const [row] = await store.listOutbox({ accountId: account.id });
    expect(row).toMatchObject({ state: 'pending', attempts: 0, leaseUntil: null });
  });
});
