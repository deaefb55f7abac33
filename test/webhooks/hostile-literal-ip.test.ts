import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { enqueueVideoEvent } from '../../src/store/webhooks.js';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.js';
import { newSecret } from '../../src/webhooks/signing.js';
import { makeAccount, sqliteBackend, type Backend } from '../store/harness.js';
import { listenOnLoopback, shutReceiver } from './receiver.js';

/**
 * The delivery-time SSRF check must cover targets written as IP literals too: Node connects to
 * them without a DNS lookup, so a check that lives only in the lookup never sees them. The
 * scenario is an endpoint registered while private networks were allowed, delivered by an
 * instance that no longer allows them.
 */
describe('literal IP targets at delivery', () => {
  let backend: Backend;
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? '');
    req.resume();
    req.on('end', () => res.writeHead(200).end('internal'));
  });
  let port = 0;
  beforeAll(async () => {
    backend = sqliteBackend();
    port = Number(new URL(await listenOnLoopback(server)).port);
  });
  afterAll(async () => {
    await backend.dispose();
    await shutReceiver(server);
  });

  it('refuses loopback written as IPv4, IPv4-mapped IPv6 (both spellings) and IPv6, and the receiver is never reached', async () => {
    const { store } = await backend.fresh();
    const account = await makeAccount(store);
    const urls = [
      `http://127.0.0.1:${port}/v4`,
      `http://[::ffff:127.0.0.1]:${port}/mapped-dotted`,
      `http://[::ffff:7f00:1]:${port}/mapped-hex`,
      `http://[::1]:${port}/v6`,
      `http://localhost:${port}/by-name`,
    ];
    for (const url of urls)
      await store.createWebhookEndpoint({ id: `we_${randomUUID().replace(/-/g, '')}`, accountId: account.id, url, events: ['video.completed'], secret: newSecret(), createdAt: Date.now() });
    await enqueueVideoEvent(store.driver, { accountId: account.id, type: 'video.completed', videoId: 'vid_literal', webhookUrl: null, now: Date.now() });

    const d = new WebhookDispatcher(
      store,
      systemClock,
      { intervalMs: 0, concurrency: 8, timeoutMs: 1_000, leaseMs: 60_000, retryBaseMs: 60_000, maxDelayMs: 60_000, maxAttempts: 12, allowPrivateNetworks: false },
      { warn: () => undefined },
    );
    try {
      const end = Date.now() + 5_000;
      for (;;) {
        await d.tick();
        const rows = await store.listOutbox({ accountId: account.id, limit: 10 });
        if (rows.length === urls.length && rows.every((r) => r.attempts === 1)) break;
        if (Date.now() > end) throw new Error('not every delivery was attempted');
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await d.stop();
    }
    expect(hits).toEqual([]);
    const attempts = await store.listDeliveryAttempts({ limit: 10 });
    const rows = await store.listOutbox({ accountId: account.id, limit: 10 });
    for (const row of rows) {
      const a = attempts.find((x) => x.outboxId === row.id)!;
      expect(a.status, row.url).toBeNull();
      expect(a.error, row.url).toBe('the target is or resolves to a private or local address');
      // Refused like a name that resolves inward: retried later (the setting may be turned back on).
      expect(row.state, row.url).toBe('pending');
    }
  });
});
