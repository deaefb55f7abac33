import { randomUUID } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import type { Clock } from '../../src/core/clock.js';
import { enqueueVideoEvent } from '../../src/store/webhooks.js';
import { WebhookDispatcher, type DispatcherSettings } from '../../src/webhooks/dispatcher.js';
import { newSecret } from '../../src/webhooks/signing.js';
import { makeAccount, postgresBackend, sqliteBackend, type Backend } from '../store/harness.js';
import { listenOnLoopback, shutReceiver } from './receiver.js';

/**
 * An attempt is recorded only by the instance that still holds the row's lease, and the
 * configuration keeps the lease well above the attempt timeout, so a slow attempt cannot be
 * overtaken by a second instance and then overwrite what that one recorded.
 */
describe('webhook lease configuration', () => {
  it('refuses a lease that is not comfortably longer than the attempt timeout', () => {
    for (const webhooks of [
      { timeout_ms: 30_000, lease_ms: 1_000 },
      { timeout_ms: 10_000, lease_ms: 10_000 },
      { timeout_ms: 10_000, lease_ms: 20_000 },
      { timeout_ms: 40_000 }, // the default lease (60 s) is too short for it
    ])
      expect(() => validateConfig({ webhooks }, '(test)'), JSON.stringify(webhooks)).toThrow(/webhooks\.lease_ms/);
    expect(validateConfig({}, '(test)').webhooks).toMatchObject({ timeout_ms: 10_000, lease_ms: 60_000 });
    expect(validateConfig({ webhooks: { timeout_ms: 10_000, lease_ms: 25_000 } }, '(test)').webhooks.lease_ms).toBe(25_000);
  });

  it('takes per-account and per-origin caps, at least 1', () => {
    const w = validateConfig({ webhooks: { per_account_concurrency: 1, per_origin_concurrency: 3 } }, '(test)').webhooks as Record<string, unknown>;
    expect(w).toMatchObject({ per_account_concurrency: 1, per_origin_concurrency: 3 });
    expect(validateConfig({}, '(test)').webhooks).toMatchObject({ per_account_concurrency: 2, per_origin_concurrency: 4 });
    expect(() => validateConfig({ webhooks: { per_account_concurrency: 0 } }, '(test)')).toThrow(/per_account_concurrency/);
  });
});

for (const make of [sqliteBackend, postgresBackend] as Array<() => Backend>) {
  describe(`a stale attempt (${make().name})`, () => {
    let backend: Backend;
    beforeAll(() => {
      backend = make();
    });
    afterAll(async () => backend.dispose());

    it('the store moves a row only for the claim that holds it: recording, releasing and deferring check the lease', async () => {
      const { store } = await backend.fresh();
      const account = await makeAccount(store);
      const ep = await store.createWebhookEndpoint({ id: `we_${randomUUID().replace(/-/g, '')}`, accountId: account.id, url: 'https://hooks.example/x', events: ['video.completed'], secret: newSecret(), createdAt: 1_000 });
      await enqueueVideoEvent(store.driver, { accountId: account.id, type: 'video.completed', videoId: 'vid_cas', webhookUrl: null, now: 1_000 });
      const [due] = await store.dueDeliveries(2_000, { limit: 10, perAccount: 2 });
      const first = (await store.leaseDelivery(due!.id, 2_000, 1_000))!;
      expect(first.leaseUntil).toBe(3_000);
      // Held: neither listed as due nor leased again, nor put off, until the lease ends.
      expect(await store.dueDeliveries(2_500, { limit: 10, perAccount: 2 })).toEqual([]);
      expect(await store.leaseDelivery(due!.id, 2_500, 1_000)).toBeUndefined();
      expect(await store.deferDelivery(due!.id, 2_500, 90_000)).toBe(false);
      const second = (await store.leaseDelivery(due!.id, 3_000, 1_000))!;
      expect(second.leaseUntil).toBe(4_000);

      const attempt = (n: number, status: number) => ({ endpointId: ep.id, attempt: n, status, error: null, latencyMs: 5, now: 3_100 });
      expect(await store.releaseDelivery(due!.id, first.leaseUntil!)).toBe(false);
      expect(await store.recordDeliveryAttempt(due!.id, attempt(1, 500), { state: 'failed' }, first.leaseUntil!)).toBe(false);
      expect(await store.recordDeliveryAttempt(due!.id, attempt(1, 200), { state: 'delivered' }, second.leaseUntil!)).toBe(true);
      expect(await store.recordDeliveryAttempt(due!.id, attempt(2, 500), { state: 'pending', nextAttemptAt: 9_000 }, second.leaseUntil!)).toBe(false);
      const [row] = await store.listOutbox({ endpointId: ep.id });
      expect(row).toMatchObject({ state: 'delivered', attempts: 1, leaseUntil: null, deliveredAt: 3_100 });
      const log = await store.listDeliveryAttempts({ outboxId: due!.id });
      expect(log).toHaveLength(3);
      expect(log.filter((a) => a.error?.includes('not recorded'))).toHaveLength(2);
    });

    it('an attempt that outlived its lease does not overwrite the delivery another instance recorded', async () => {
      // The first request is held until released, then answered 500; later ones get 200 at once.
      const held: ServerResponse[] = [];
      let requests = 0;
      const server = createServer((req, res) => {
        req.resume();
        req.on('end', () => (++requests === 1 ? held.push(res) : res.writeHead(200).end()));
      });
      const url = `${await listenOnLoopback(server)}/hook`;
      try {
        const { store } = await backend.fresh();
        const account = await makeAccount(store);
        const ep = await store.createWebhookEndpoint({ id: `we_${randomUUID().replace(/-/g, '')}`, accountId: account.id, url, events: ['video.completed'], secret: newSecret(), createdAt: Date.now() });
        await enqueueVideoEvent(store.driver, { accountId: account.id, type: 'video.completed', videoId: 'vid_lease', webhookUrl: null, now: Date.now() });

        const settings: DispatcherSettings = { intervalMs: 0, concurrency: 8, timeoutMs: 5_000, leaseMs: 60_000, retryBaseMs: 60_000, maxDelayMs: 60_000, maxAttempts: 12, allowPrivateNetworks: true };
        const quiet = { warn: () => undefined };
        // Instance B's clock is past A's lease: to B, A's claim has expired (A stalled, or the clocks differ).
        const late: Clock = { now: () => Date.now() + 61_000 };
        const a = new WebhookDispatcher(store, { now: () => Date.now() }, settings, quiet);
        const b = new WebhookDispatcher(store, late, settings, quiet);
        try {
          await a.tick();
          await waitFor(() => held.length === 1);
          await b.tick();
          await waitFor(async () => (await store.listOutbox({ endpointId: ep.id })).at(0)?.state === 'delivered');
          held[0]!.writeHead(500).end();
          await waitFor(async () => (await store.listDeliveryAttempts({ endpointId: ep.id })).length === 2);
        } finally {
          await a.stop();
          await b.stop();
        }
        const [row] = await store.listOutbox({ endpointId: ep.id });
        expect(row).toMatchObject({ state: 'delivered', attempts: 1, leaseUntil: null });
        const attempts = await store.listDeliveryAttempts({ endpointId: ep.id });
        // Both attempts are in the log; the stale one says its outcome was not recorded.
        expect(attempts.map((x) => x.status).sort()).toEqual([200, 500]);
        expect(attempts.find((x) => x.status === 500)!.error).toMatch(/lease/);
        expect(attempts.find((x) => x.status === 200)!.error).toBeNull();
      } finally {
        for (const r of held) r.destroy();
        await shutReceiver(server);
      }
    });
  });
}

async function waitFor(check: () => boolean | Promise<boolean>, maxMs = 5_000): Promise<void> {
  const end = Date.now() + maxMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
