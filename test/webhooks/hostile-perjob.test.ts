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
 * A job's own target (gateway_webhook_url) is signed by an active endpoint of its account: a
 * disabled endpoint's secret never signs anything again, and an event whose account has no active
 * endpoint left is recorded as failed, with the reason, instead of vanishing.
 */
for (const make of [sqliteBackend, postgresBackend] as Array<() => Backend>) {
  describe(`per-job targets and disabled endpoints (${make().name})`, () => {
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

    const endpoint = (store: SqlStore, accountId: string, path: string, events: VideoEventType[]) =>
      store.createWebhookEndpoint({ id: `we_${randomUUID().replace(/-/g, '')}`, accountId, url: `${base}${path}`, events, secret: newSecret(), createdAt: Date.now() });
    const settle = (store: SqlStore, accountId: string, path: string) =>
      enqueueVideoEvent(store.driver, { accountId, type: 'video.completed', videoId: `vid_${randomUUID()}`, webhookUrl: `${base}${path}`, now: Date.now() });

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

    it('endpoint disabled while the job ran: the event is in the outbox and the delivery log, failed with a reason', async () => {
      const { store } = await backend.fresh();
      const account = await makeAccount(store);
      const e1 = await endpoint(store, account.id, '/endpoint-1', ['video.completed']);
      await store.disableWebhookEndpoint(e1.id, Date.now());
      await settle(store, account.id, '/per-job-1');

      const outbox = await store.listOutbox({ accountId: account.id, limit: 10 });
      expect(outbox.map((o) => o.url)).toEqual([`${base}/per-job-1`]);
      // It shows in the log of the endpoint that would have signed it.
      expect((await store.listOutbox({ endpointId: e1.id })).map((o) => o.url)).toEqual([`${base}/per-job-1`]);

      const [row] = await deliverAll(store, account.id);
      expect(row).toMatchObject({ state: 'failed', attempts: 1 });
      const [attempt] = await store.listDeliveryAttempts({ outboxId: row!.id });
      expect(attempt).toMatchObject({ status: null, error: 'the account has no active webhook endpoint to sign with' });
      expect(got.filter((g) => g.path === '/per-job-1')).toEqual([]);
    });

    it('signing endpoint disabled after settlement: signed with the account’s active endpoint, never the disabled secret', async () => {
      const { store } = await backend.fresh();
      const account = await makeAccount(store);
      const e2 = await endpoint(store, account.id, '/endpoint-2', ['video.failed']);
      await new Promise((r) => setTimeout(r, 2));
      const e3 = await endpoint(store, account.id, '/endpoint-3', ['video.failed']);
      await settle(store, account.id, '/per-job-2');
      await store.disableWebhookEndpoint(e2.id, Date.now());

      const [row] = await deliverAll(store, account.id);
      expect(row).toMatchObject({ state: 'delivered', attempts: 1 });
      const g = got.find((x) => x.path === '/per-job-2')!;
      expect(g).toBeDefined();
      const headers = { 'webhook-id': String(g.headers['webhook-id']), 'webhook-timestamp': String(g.headers['webhook-timestamp']), 'webhook-signature': String(g.headers['webhook-signature']) };
      expect(new Webhook(e3.secret).verify(g.body, headers)).toMatchObject({ type: 'video.completed' });
      expect(() => new Webhook(e2.secret).verify(g.body, headers)).toThrow();
    });

    it('signing endpoint disabled after settlement, none left: failed with a reason, nothing sent', async () => {
      const { store } = await backend.fresh();
      const account = await makeAccount(store);
      const e4 = await endpoint(store, account.id, '/endpoint-4', ['video.failed']);
      await settle(store, account.id, '/per-job-3');
      await store.disableWebhookEndpoint(e4.id, Date.now());

      const [row] = await deliverAll(store, account.id);
      expect(row).toMatchObject({ state: 'failed', attempts: 1 });
      const [attempt] = await store.listDeliveryAttempts({ outboxId: row!.id });
      expect(attempt!.error).toBe('the account has no active webhook endpoint to sign with');
      expect(got.filter((x) => x.path === '/per-job-3')).toEqual([]);
    });
  });
}
