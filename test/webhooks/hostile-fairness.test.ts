import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { openStore, type SqlStore } from '../../src/store/index.js';
import type { VideoEventType } from '../../src/store/webhook-types.js';
import { enqueueVideoEvent } from '../../src/store/webhooks.js';
import { WebhookDispatcher, type DispatcherSettings } from '../../src/webhooks/dispatcher.js';
import { newSecret } from '../../src/webhooks/signing.js';
import { makeAccount, postgresBackend, sqliteBackend, type Backend } from '../store/harness.js';
import { listenOnLoopback, shutReceiver } from './receiver.js';

/**
 * One tenant must not be able to stall every tenant's deliveries by pointing many per-job targets
 * at a receiver that never answers: deliveries in flight are capped per account and per receiver
 * origin, claims are fair across accounts, and a black hole is backed off instead of being tried
 * again and again.
 */

interface Hit {
  path: string;
  at: number;
  webhookId: string;
}

/** A loopback HTTP server; `handle` decides what each request gets. Counts requests open at once. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse) => void) {
  const hits: Hit[] = [];
  let open = 0;
  let maxOpen = 0;
  const server = createServer((req, res) => {
    hits.push({ path: req.url ?? '', at: Date.now(), webhookId: String(req.headers['webhook-id']) });
    open++;
    maxOpen = Math.max(maxOpen, open);
    res.on('close', () => open--);
    req.resume();
    req.on('end', () => handle(req, res));
  });
  const url = await listenOnLoopback(server);
  return {
    url,
    hits,
    maxOpen: () => maxOpen,
    async close() {
      await shutReceiver(server);
    },
  };
}

const blackHole = () => serve(() => undefined);
const answering = () => serve((_req, res) => res.writeHead(200).end('ok'));

const quiet = { warn: () => undefined };

function settings(over: Partial<DispatcherSettings> & Record<string, unknown> = {}): DispatcherSettings {
  return {
    intervalMs: 20,
    concurrency: 8,
    timeoutMs: 1_000,
    leaseMs: 60_000,
    retryBaseMs: 60_000,
    maxDelayMs: 60_000,
    maxAttempts: 12,
    allowPrivateNetworks: true,
    ...over,
  };
}

async function endpoint(store: SqlStore, accountId: string, url: string, events: VideoEventType[] = ['video.completed', 'video.failed', 'video.cancelled']) {
  return store.createWebhookEndpoint({ id: `we_${randomUUID().replace(/-/g, '')}`, accountId, url, events, secret: newSecret(), createdAt: Date.now() });
}

/** What the settlement of one job writes to the outbox. */
async function settled(store: SqlStore, accountId: string, opts: { webhookUrl?: string; now?: number } = {}) {
  await enqueueVideoEvent(store.driver, {
    accountId,
    type: 'video.completed',
    videoId: `vid_${randomUUID()}`,
    webhookUrl: opts.webhookUrl ?? null,
    now: opts.now ?? Date.now(),
  });
}

async function until(check: () => boolean | Promise<boolean>, maxMs = 5_000): Promise<void> {
  const end = Date.now() + maxMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * An attempt's timeout where a test asks whether a delivery waited for one to give up. The other
 * tenant's delivery must arrive within half of it: long enough for a busy machine to make a first
 * delivery, still far from what waiting for a black hole's attempt would take.
 */
const ATTEMPT_MS = 5_000;
const EARLY_MS = ATTEMPT_MS / 2;

for (const make of [sqliteBackend, postgresBackend] as Array<() => Backend>) {
  describe(`webhook fairness (${make().name})`, () => {
    let backend: Backend;
    const cleanup: Array<() => Promise<unknown>> = [];
    beforeAll(() => {
      backend = make();
    });
    afterEach(async () => {
      while (cleanup.length) await cleanup.pop()!().catch(() => undefined);
    });
    afterAll(async () => backend.dispose());

    it('the outbox hands out due rows round-robin across accounts, oldest first within each', async () => {
      const { store } = await backend.fresh();
      const a = await makeAccount(store);
      const b = await makeAccount(store);
      await endpoint(store, a.id, 'https://a.example/hook');
      await endpoint(store, b.id, 'https://b.example/hook');
      for (let i = 0; i < 10; i++) await settled(store, a.id, { now: 1_000 + i });
      await settled(store, b.id, { now: 5_000 });
      await settled(store, b.id, { now: 9_000 }); // not due yet
      const due = await store.dueDeliveries(6_000, { limit: 4, perAccount: 2 });
      expect(due.map((d) => d.accountId)).toEqual([a.id, b.id, a.id]);
      expect(due.map((d) => d.url)).toEqual(['https://a.example/hook', 'https://b.example/hook', 'https://a.example/hook']);
    });

    it("a black hole fed by one tenant's jobs does not hold back another tenant's delivery", async () => {
      const hole = await blackHole();
      const good = await answering();
      cleanup.push(() => hole.close(), () => good.close());
      const { store } = await backend.fresh();
      const a = await makeAccount(store);
      const b = await makeAccount(store);
      // A only needs an endpoint so that its jobs may name their own targets; it takes failures only.
      await endpoint(store, a.id, `${good.url}/a`, ['video.failed']);
      await endpoint(store, b.id, `${good.url}/b`);
      const t = Date.now();
      for (let i = 0; i < 16; i++) await settled(store, a.id, { webhookUrl: `${hole.url}/hole-${i}`, now: t - 2_000 + i });
      await settled(store, b.id, { now: t });

      const d = new WebhookDispatcher(store, systemClock, settings({ timeoutMs: ATTEMPT_MS }), quiet);
      // The black hole goes first, ending the attempts stop() would otherwise wait out.
      cleanup.push(() => d.stop(), () => hole.close());
      const started = Date.now();
      d.start();
      await until(() => good.hits.length === 1, 2 * ATTEMPT_MS);
      // Well inside one attempt's timeout: B never waited for one of A's attempts to give up.
      expect(good.hits[0]!.at - started).toBeLessThan(EARLY_MS);
      expect(good.hits[0]!.path).toBe('/b');
      // A's own deliveries never held more than its share of the slots.
      expect(hole.maxOpen()).toBeLessThanOrEqual(2);
    });

    it('a black hole stops taking slots: after a few timeouts its rows are put off without spending attempts', async () => {
      const hole = await blackHole();
      cleanup.push(() => hole.close());
      const { store } = await backend.fresh();
      const a = await makeAccount(store);
      await endpoint(store, a.id, `${hole.url}/a`, ['video.failed']);
      const t = Date.now();
      for (let i = 0; i < 30; i++) await settled(store, a.id, { webhookUrl: `${hole.url}/hole-${i}`, now: t + i });

      const d = new WebhookDispatcher(store, systemClock, settings({ timeoutMs: 200 }), quiet);
      cleanup.push(() => d.stop());
      const putOff = async () => (await store.listOutbox({ accountId: a.id, limit: 100 })).filter((r) => r.attempts === 0 && r.nextAttemptAt > Date.now() + 5_000);
      const started = Date.now();
      d.start();
      // Ten attempts' worth of time at least, and until the untried rows have been put off (on a
      // busy machine the few attempts before the back-off may take longer than that).
      await until(async () => Date.now() - started >= 2_000 && (await putOff()).length >= 20, 15_000);
      await d.stop();

      expect(hole.hits.length).toBeGreaterThanOrEqual(3);
      expect(hole.hits.length).toBeLessThanOrEqual(6);
      const rows = await store.listOutbox({ accountId: a.id, limit: 100 });
      expect(rows).toHaveLength(30);
      // Nothing was failed early; the untried rows are pending, with no attempt spent, and not due now.
      expect(rows.every((r) => r.state === 'pending')).toBe(true);
      expect((await putOff()).length).toBeGreaterThanOrEqual(20);
      const attempts = await store.listDeliveryAttempts({ limit: 100 });
      expect(attempts.length).toBe(hole.hits.length);
    });

    it('at most per_origin_concurrency deliveries are in flight to one receiver, however many accounts name it', async () => {
      const hole = await blackHole();
      const good = await answering();
      cleanup.push(() => hole.close(), () => good.close());
      const { store } = await backend.fresh();
      const t = Date.now();
      for (let i = 0; i < 6; i++) {
        const acct = await makeAccount(store);
        await endpoint(store, acct.id, `${hole.url}/acct-${i}`);
        await settled(store, acct.id, { now: t - 1_000 + i });
        await settled(store, acct.id, { now: t - 1_000 + i });
      }
      const late = await makeAccount(store);
      await endpoint(store, late.id, `${good.url}/late`);
      await settled(store, late.id, { now: t });

      const d = new WebhookDispatcher(store, systemClock, settings({ timeoutMs: ATTEMPT_MS, perOriginConcurrency: 3, perAccountConcurrency: 2 }), quiet);
      cleanup.push(() => d.stop(), () => hole.close());
      const started = Date.now();
      d.start();
      await until(() => good.hits.length === 1, 2 * ATTEMPT_MS);
      expect(good.hits[0]!.at - started).toBeLessThan(EARLY_MS);
      // The receiver's slots fill (their requests may arrive after the other receiver's), and no more.
      await until(() => hole.maxOpen() >= 3);
      await sleep(300);
      expect(hole.maxOpen()).toBe(3);
    });

    it('two instances: every delivery of the other tenant arrives once, early, past a black hole', async () => {
      const hole = await blackHole();
      const good = await answering();
      cleanup.push(() => hole.close(), () => good.close());
      const { store, url } = await backend.fresh();
      // A second instance: its own connection(s) to the same database.
      const second = await openStore(url, { dataDir: '/tmp' });
      cleanup.push(() => second.close());
      const a = await makeAccount(store);
      const b = await makeAccount(store);
      await endpoint(store, a.id, `${good.url}/a`, ['video.failed']);
      await endpoint(store, b.id, `${good.url}/b`);
      const t = Date.now();
      for (let i = 0; i < 24; i++) await settled(store, a.id, { webhookUrl: `${hole.url}/hole-${i}`, now: t - 2_000 + i });
      for (let i = 0; i < 6; i++) await settled(store, b.id, { now: t + i });

      const d1 = new WebhookDispatcher(store, systemClock, settings({ intervalMs: 10, timeoutMs: ATTEMPT_MS }), quiet);
      const d2 = new WebhookDispatcher(second, systemClock, settings({ intervalMs: 10, timeoutMs: ATTEMPT_MS }), quiet);
      cleanup.push(() => d1.stop(), () => d2.stop(), () => hole.close());
      const started = Date.now();
      d1.start();
      d2.start();
      await until(() => good.hits.length >= 6, 2 * ATTEMPT_MS);
      expect(Math.max(...good.hits.map((h) => h.at)) - started).toBeLessThan(EARLY_MS);
      await sleep(200);
      expect(good.hits).toHaveLength(6);
      expect(new Set(good.hits.map((h) => h.webhookId)).size).toBe(6);
    });
  });
}
