import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import type { Clock } from '../../src/core/clock.js';
import { enqueueVideoEvent } from '../../src/store/webhooks.js';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.js';
import { newSecret } from '../../src/webhooks/signing.js';
import { makeAccount, postgresBackend, sqliteBackend, type Backend } from '../store/harness.js';

/**
 * Finished deliveries and their attempt logs are kept for `webhooks.retention_days` after their
 * last attempt, then deleted in batches by the dispatcher; without that the outbox grows for ever.
 */
const DAY = 86_400_000;

describe('webhook retention configuration', () => {
  it('defaults to 30 days; 0 keeps the history for ever', () => {
    expect(validateConfig({}, '(test)').webhooks).toMatchObject({ retention_days: 30 });
    expect(validateConfig({ webhooks: { retention_days: 0 } }, '(test)').webhooks).toMatchObject({ retention_days: 0 });
    expect(() => validateConfig({ webhooks: { retention_days: -1 } }, '(test)')).toThrow(/retention_days/);
  });
});

for (const make of [sqliteBackend, postgresBackend] as Array<() => Backend>) {
  describe(`finished deliveries past their retention (${make().name})`, () => {
    let backend: Backend;
    beforeAll(() => {
      backend = make();
    });
    afterAll(async () => backend.dispose());

    /** An account with an endpoint and `n` deliveries enqueued at `at`, each leased and recorded as `state` at `at`. */
    async function history(store: Awaited<ReturnType<Backend['fresh']>>['store'], n: number, at: number, state: 'delivered' | 'failed' | 'pending') {
      const account = await makeAccount(store);
      await store.createWebhookEndpoint({ id: `we_${randomUUID().replace(/-/g, '')}`, accountId: account.id, url: 'https://hooks.example/x', events: ['video.completed'], secret: newSecret(), createdAt: at });
      for (let i = 0; i < n; i++) await enqueueVideoEvent(store.driver, { accountId: account.id, type: 'video.completed', videoId: `vid_${i}`, webhookUrl: null, now: at });
      for (const due of await store.dueDeliveries(at, { limit: 100, perAccount: 100 })) {
        if (due.accountId !== account.id) continue;
        const row = (await store.leaseDelivery(due.id, at, 60_000))!;
        const outcome = state === 'pending' ? { state, nextAttemptAt: at } : { state };
        await store.recordDeliveryAttempt(row.id, { endpointId: row.endpointId, attempt: 1, status: state === 'delivered' ? 200 : 500, error: null, latencyMs: 5, now: at }, outcome, row.leaseUntil ?? 0);
      }
      return account;
    }

    it('the store deletes finished rows older than the cut with their attempts, in batches, and keeps the rest', async () => {
      const { store } = await backend.fresh();
      const old = await history(store, 5, 1 * DAY, 'delivered');
      const oldFailed = await history(store, 2, 1 * DAY, 'failed');
      const oldPending = await history(store, 2, 1 * DAY, 'pending');
      const recent = await history(store, 3, 40 * DAY, 'delivered');
      const rows = async (accountId: string) => (await store.listOutbox({ accountId, limit: 100 })).length;
      const attempts = async (accountId: string) => {
        let n = 0;
        for (const d of await store.listOutbox({ accountId, limit: 100 })) n += (await store.listDeliveryAttempts({ outboxId: d.id })).length;
        return n;
      };
      expect(await rows(old.id)).toBe(5);
      expect(await attempts(old.id)).toBe(5);
      // A batch of 4, then the rest.
      expect(await store.purgeFinishedDeliveries(10 * DAY, 4)).toBe(4);
      expect(await store.purgeFinishedDeliveries(10 * DAY, 100)).toBe(3);
      expect(await store.purgeFinishedDeliveries(10 * DAY, 100)).toBe(0);
      expect(await rows(old.id)).toBe(0);
      expect(await rows(oldFailed.id)).toBe(0);
      // A pending delivery is never history, however old; recent ones stay.
      expect(await rows(oldPending.id)).toBe(2);
      expect(await rows(recent.id)).toBe(3);
      expect(await attempts(recent.id)).toBe(3);
      // The attempt log of the deleted rows went with them (listed by endpoint, none left of theirs).
      const left = await store.listDeliveryAttempts({ limit: 100 });
      expect(left.length).toBe(2 + 3);
    });

    it('the dispatcher purges past the configured retention on its turns', async () => {
      const { store } = await backend.fresh();
      const old = await history(store, 3, 1 * DAY, 'delivered');
      const kept = await history(store, 2, 50 * DAY, 'failed');
      let now = 60 * DAY;
      const clock = { now: () => now } as unknown as Clock;
      const settings = { intervalMs: 0, concurrency: 1, timeoutMs: 1_000, leaseMs: 10_000, retryBaseMs: 1_000, maxDelayMs: 1_000, maxAttempts: 1, allowPrivateNetworks: false };
      const keepAll = new WebhookDispatcher(store, clock, { ...settings, retentionMs: 0 }, { warn: () => undefined });
      await keepAll.tick();
      await new Promise((r) => setTimeout(r, 100));
      expect((await store.listOutbox({ accountId: old.id, limit: 100 })).length).toBe(3);
      await keepAll.stop();

      // The purge runs beside the tick (not awaited by it): wait for it, up to a deadline rather
      // than a count of polls, which a busy machine can use up before a PostgreSQL DELETE ends.
      const emptied = async (accountId: string) => {
        for (const end = Date.now() + 10_000; Date.now() < end; await new Promise((r) => setTimeout(r, 20)))
          if ((await store.listOutbox({ accountId, limit: 100 })).length === 0) return;
      };
      const d = new WebhookDispatcher(store, clock, { ...settings, retentionMs: 30 * DAY }, { warn: () => undefined });
      await d.tick();
      await emptied(old.id);
      expect((await store.listOutbox({ accountId: old.id, limit: 100 })).length).toBe(0);
      expect((await store.listOutbox({ accountId: kept.id, limit: 100 })).length).toBe(2);
      // Twenty-one days on, the second account's history is past the retention too: purged at the next turn after the interval.
      now += 21 * DAY;
      await d.tick();
      await emptied(kept.id);
      expect((await store.listOutbox({ accountId: kept.id, limit: 100 })).length).toBe(0);
      await d.stop();
    });
  });
}
