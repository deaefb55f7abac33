import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import OpenAI from 'openai';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import type { SqlStore } from '../../src/store/index.js';
import { enqueueVideoEvent } from '../../src/store/webhooks.js';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.js';
import { newSecret } from '../../src/webhooks/signing.js';
import { makeAccount, postgresBackend, sqliteBackend, type Backend } from '../store/harness.js';
import { listenOnLoopback, shutReceiver } from './receiver.js';

/**
 * Rotating an endpoint's secret: register a second endpoint at the same URL, move the receiver to
 * the new secret, disable the old endpoint. While both are active each event reaches that URL once,
 * signed with both secrets (so the receiver verifies with whichever it holds); a delivery waiting
 * for a retry when the old endpoint is disabled goes on, signed with the new secret only.
 */
for (const make of [sqliteBackend, postgresBackend] as Array<() => Backend>) {
  describe(`secret rotation over one URL (${make().name})`, () => {
    let backend: Backend;
    const got: Array<{ path: string; headers: IncomingHttpHeaders; body: string }> = [];
    const statuses: number[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        got.push({ path: req.url ?? '', headers: req.headers, body });
        res.writeHead(statuses.shift() ?? 200).end();
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

    const endpoint = async (store: SqlStore, accountId: string, path: string) => {
      const e = await store.createWebhookEndpoint({ id: `we_${randomUUID().replace(/-/g, '')}`, accountId, url: `${base}${path}`, events: ['video.completed'], secret: newSecret(), createdAt: Date.now() });
      await new Promise((r) => setTimeout(r, 2));
      return e;
    };
    const settle = (store: SqlStore, accountId: string) =>
      enqueueVideoEvent(store.driver, { accountId, type: 'video.completed', videoId: `vid_${randomUUID()}`, webhookUrl: null, now: Date.now() });
    const dispatcher = (store: SqlStore) =>
      new WebhookDispatcher(
        store,
        systemClock,
        { intervalMs: 0, concurrency: 8, timeoutMs: 1_000, leaseMs: 60_000, retryBaseMs: 50, maxDelayMs: 50, maxAttempts: 12, allowPrivateNetworks: true },
        { warn: () => undefined },
      );
    async function until(d: WebhookDispatcher, done: () => Promise<boolean>) {
      const end = Date.now() + 5_000;
      while (!(await done())) {
        if (Date.now() > end) throw new Error('did not happen');
        await d.tick();
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    const headersOf = (g: (typeof got)[number]) => ({
      'webhook-id': String(g.headers['webhook-id']),
      'webhook-timestamp': String(g.headers['webhook-timestamp']),
      'webhook-signature': String(g.headers['webhook-signature']),
    });
    const verifies = (secret: string, g: (typeof got)[number]) => {
      try {
        new Webhook(secret).verify(g.body, headersOf(g));
        return true;
      } catch {
        return false;
      }
    };

    it('old and new endpoint both active: the event is sent once, and verifies with either secret (Standard Webhooks and OpenAI)', async () => {
      const { store } = await backend.fresh();
      const account = await makeAccount(store);
      const old = await endpoint(store, account.id, '/rot-1');
      const fresh = await endpoint(store, account.id, '/rot-1');
      await settle(store, account.id);
      const d = dispatcher(store);
      try {
        await until(d, async () => (await store.listOutbox({ accountId: account.id })).every((r) => r.state !== 'pending'));
      } finally {
        await d.stop();
      }
      const seen = got.filter((g) => g.path === '/rot-1');
      expect(seen).toHaveLength(1);
      expect([verifies(old.secret, seen[0]!), verifies(fresh.secret, seen[0]!)]).toEqual([true, true]);
      for (const secret of [old.secret, fresh.secret])
        await expect(new OpenAI({ apiKey: 'x', webhookSecret: secret }).webhooks.unwrap(seen[0]!.body, headersOf(seen[0]!))).resolves.toMatchObject({ type: 'video.completed' });
      expect(verifies(newSecret(), seen[0]!)).toBe(false);
    });

    it('old endpoint disabled while a delivery waits for its retry: the retry is delivered, signed with the new secret only', async () => {
      const { store } = await backend.fresh();
      const account = await makeAccount(store);
      const old = await endpoint(store, account.id, '/rot-2');
      await settle(store, account.id);
      statuses.push(503);
      const d = dispatcher(store);
      try {
        await until(d, async () => (await store.listOutbox({ accountId: account.id }))[0]!.attempts === 1);
        const fresh = await endpoint(store, account.id, '/rot-2');
        await store.disableWebhookEndpoint(old.id, Date.now());
        await until(d, async () => (await store.listOutbox({ accountId: account.id }))[0]!.state !== 'pending');
        expect((await store.listOutbox({ accountId: account.id }))[0]).toMatchObject({ state: 'delivered', attempts: 2 });
        const seen = got.filter((g) => g.path === '/rot-2');
        expect(seen).toHaveLength(2);
        expect(seen[1]!.headers['webhook-id']).toBe(seen[0]!.headers['webhook-id']);
        expect([verifies(old.secret, seen[1]!), verifies(fresh.secret, seen[1]!)]).toEqual([false, true]);
      } finally {
        await d.stop();
      }
    });
  });
}
