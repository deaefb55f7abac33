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
 * An endpoint disabled while one of its deliveries waits for a retry: the retry sends nothing (its
 * secret never signs again) and the delivery ends `failed` with the reason, instead of retrying for
 * hours or vanishing.
 */
describe('an endpoint disabled between two attempts of a delivery', () => {
  let backend: Backend;
  const statuses: number[] = [];
  let requests = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      res.writeHead(statuses.shift() ?? 200).end();
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

  it('the retry sends nothing and the delivery is failed with the reason', async () => {
    const { store } = await backend.fresh();
    const account = await makeAccount(store);
    const e = await store.createWebhookEndpoint({ id: `we_${randomUUID().replace(/-/g, '')}`, accountId: account.id, url: `${base}/hook`, events: ['video.completed'], secret: newSecret(), createdAt: Date.now() });
    await enqueueVideoEvent(store.driver, { accountId: account.id, type: 'video.completed', videoId: `vid_${randomUUID()}`, webhookUrl: null, now: Date.now() });
    statuses.push(500);
    const d = new WebhookDispatcher(
      store,
      systemClock,
      { intervalMs: 0, concurrency: 4, timeoutMs: 1_000, leaseMs: 60_000, retryBaseMs: 50, maxDelayMs: 50, maxAttempts: 12, allowPrivateNetworks: true },
      { warn: () => undefined },
    );
    const row = async () => (await store.listOutbox({ accountId: account.id }))[0]!;
    try {
      const end = Date.now() + 5_000;
      while ((await row()).attempts < 1 && Date.now() < end) {
        await d.tick();
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(await row()).toMatchObject({ state: 'pending', attempts: 1 });
      await store.disableWebhookEndpoint(e.id, Date.now());
      while ((await row()).state === 'pending' && Date.now() < end) {
        await d.tick();
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await d.stop();
    }
    expect(await row()).toMatchObject({ state: 'failed', attempts: 2 });
    const attempts = await store.listDeliveryAttempts({ endpointId: e.id });
    expect(attempts.map((a) => [a.attempt, a.status, a.error])).toEqual([
      [2, null, 'the endpoint was disabled'],
      [1, 500, null],
    ]);
    expect(requests).toBe(1);
  });
});
