import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import type { SqlStore } from '../../src/store/index.js';
import type { VideoEventType } from '../../src/store/webhook-types.js';
import { enqueueVideoEvent } from '../../src/store/webhooks.js';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.js';
import { newSecret } from '../../src/webhooks/signing.js';
import { makeAccount, postgresBackend, sqliteBackend, type Backend } from '../store/harness.js';
import { listenOnLoopback, shutReceiver } from './receiver.js';

/**
 * A job whose gateway_webhook_url is the URL of one of its account's endpoints: that receiver gets
 * the event once (one webhook-id, which is what receivers deduplicate on), signed with the secret
 * registered for that URL, never a second copy signed with another endpoint's secret.
 */
for (const make of [sqliteBackend, postgresBackend] as Array<() => Backend>) {
  describe(`a per-job target that is an endpoint's own URL (${make().name})`, () => {
    let backend: Backend;
    const got: Array<{ path: string; headers: IncomingHttpHeaders; body: string }> = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        got.push({ path: req.url ?? '', headers: req.headers, body });
        res.writeHead(200).end();
      });
    });
    let base = '';
    beforeAll(async () => {
      backend = make();
      base = await listenOnLoopback(server);
    });
    afterAll(async () => {
      await backend.dispose();
      await shutReceiver(server);
    });

    const endpoint = async (store: SqlStore, accountId: string, path: string, events: VideoEventType[]) => {
      const e = await store.createWebhookEndpoint({ id: `we_${randomUUID().replace(/-/g, '')}`, accountId, url: `${base}${path}`, events, secret: newSecret(), createdAt: Date.now() });
      await new Promise((r) => setTimeout(r, 2)); // distinct created_at: "first active" is well defined
      return e;
    };

    async function deliverAll(store: SqlStore, accountId: string) {
      const d = new WebhookDispatcher(
        store,
        systemClock,
        { intervalMs: 0, concurrency: 8, timeoutMs: 1_000, leaseMs: 60_000, retryBaseMs: 60_000, maxDelayMs: 60_000, maxAttempts: 12, allowPrivateNetworks: true },
        { warn: () => undefined },
      );
      try {
        const end = Date.now() + 5_000;
        for (;;) {
          await d.tick();
          await new Promise((r) => setTimeout(r, 30));
          const rows = await store.listOutbox({ accountId, limit: 10 });
          if (rows.every((r) => r.state !== 'pending')) return rows;
          if (Date.now() > end) throw new Error('still pending');
        }
      } finally {
        await d.stop();
      }
    }

    const verifies = (secret: string, g: (typeof got)[number]) => {
      const h = { 'webhook-id': String(g.headers['webhook-id']), 'webhook-timestamp': String(g.headers['webhook-timestamp']), 'webhook-signature': String(g.headers['webhook-signature']) };
      try {
        new Webhook(secret).verify(g.body, h);
        return true;
      } catch {
        return false;
      }
    };

    it('subscribed endpoint: one delivery, one webhook-id, the endpoint’s own', async () => {
      const { store } = await backend.fresh();
      const account = await makeAccount(store);
      const e = await endpoint(store, account.id, '/same-1', ['video.completed']);
      await enqueueVideoEvent(store.driver, { accountId: account.id, type: 'video.completed', videoId: `vid_${randomUUID()}`, webhookUrl: `${base}/same-1`, now: Date.now() });

      const rows = await deliverAll(store, account.id);
      expect(rows.map((r) => [r.endpointId, r.state])).toEqual([[e.id, 'delivered']]);
      const seen = got.filter((g) => g.path === '/same-1');
      expect(seen).toHaveLength(1);
      expect(verifies(e.secret, seen[0]!)).toBe(true);
    });

    it('endpoint not subscribed to the event: sent once, filed under it and signed with its secret, not the first endpoint’s', async () => {
      const { store } = await backend.fresh();
      const account = await makeAccount(store);
      const first = await endpoint(store, account.id, '/other-2', ['video.completed']);
      const own = await endpoint(store, account.id, '/same-2', ['video.completed']);
      await enqueueVideoEvent(store.driver, { accountId: account.id, type: 'video.failed', videoId: `vid_${randomUUID()}`, webhookUrl: `${base}/same-2`, now: Date.now() });

      const rows = await deliverAll(store, account.id);
      expect(rows.map((r) => [r.endpointId, r.url, r.state])).toEqual([[own.id, `${base}/same-2`, 'delivered']]);
      const seen = got.filter((g) => g.path === '/same-2');
      expect(seen).toHaveLength(1);
      expect(verifies(own.secret, seen[0]!)).toBe(true);
      expect(verifies(first.secret, seen[0]!)).toBe(false);
    });

    it('the same URL spelled differently (upper-case scheme) is the same receiver', async () => {
      const { store } = await backend.fresh();
      const account = await makeAccount(store);
      const e = await endpoint(store, account.id, '/same-3', ['video.completed']);
      const spelled = base.replace('http://127.0.0.1', 'HTTP://127.0.0.1') + '/same-3';
      await enqueueVideoEvent(store.driver, { accountId: account.id, type: 'video.completed', videoId: `vid_${randomUUID()}`, webhookUrl: spelled, now: Date.now() });
      const rows = await deliverAll(store, account.id);
      expect(rows.map((r) => [r.endpointId, r.state])).toEqual([[e.id, 'delivered']]);
      expect(got.filter((g) => g.path === '/same-3')).toHaveLength(1);
    });

    it('another account’s endpoint at the same URL changes nothing: that account gets no row', async () => {
      const { store } = await backend.fresh();
      const mine = await makeAccount(store);
      const theirs = await makeAccount(store);
      const myEndpoint = await endpoint(store, mine.id, '/mine-4', ['video.completed']);
      await endpoint(store, theirs.id, '/theirs-4', ['video.completed']);
      await enqueueVideoEvent(store.driver, { accountId: mine.id, type: 'video.completed', videoId: `vid_${randomUUID()}`, webhookUrl: `${base}/theirs-4`, now: Date.now() });
      expect(await store.listOutbox({ accountId: theirs.id })).toEqual([]);
      const rows = await store.listOutbox({ accountId: mine.id });
      expect(rows.map((r) => [r.endpointId, r.url]).sort()).toEqual([[myEndpoint.id, `${base}/mine-4`], [myEndpoint.id, `${base}/theirs-4`]].sort());
    });
  });
}
