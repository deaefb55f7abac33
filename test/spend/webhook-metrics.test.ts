import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';
import { delta, scrape, total } from '../ops/scrape.js';
import { Receiver, until } from './receiver.js';

/**
 * Webhook delivery in /metrics (scrape, act, scrape, compare) and receivers that break the
 * connection mid-answer: the attempt is retried, the gateway stays up, no socket is left open.
 */
let sim: SimServer;
let receiver: Receiver;
let gw: TestGateway;
const admin = () => ({ authorization: `Bearer ${gw.adminToken}` });

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 50 });
  receiver = await Receiver.start();
  gw = await startTestGateway({
    ...upstreamsFor([{ module: sora, sim }]),
    webhooks: { allow_private_networks: true, interval_ms: 20, retry_base_ms: 50, max_delay_ms: 100, timeout_ms: 1_000, max_attempts: 2 },
  });
});
afterAll(async () => {
  await gw?.close();
  await receiver?.close();
  await sim?.close();
});

async function accountWithEndpoint() {
  const { key, account } = await gw.newKey(10);
  const r = await call(gw, 'POST', '/admin/webhooks', { headers: admin(), body: { account, url: receiver.url } });
  expect(r.status, r.text).toBe(201);
  return { key, endpoint: r.json.id as string };
}

async function finishedVideo(key: string) {
  const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'metrics' } });
  expect(created.status, created.text).toBe(200);
  return pollUntilDone(gw, key, created.json.id);
}

const deliveries = (endpoint: string) => call(gw, 'GET', `/admin/webhooks/${endpoint}/deliveries`, { headers: admin() }).then((r) => r.json);
/** Inodes of every socket the kernel still has a connection or listener for. */
function liveSocketInodes(): Set<string> {
  const live = new Set<string>();
  for (const table of ['tcp', 'tcp6', 'udp', 'udp6', 'unix']) {
    let text = '';
    try {
      text = readFileSync(`/proc/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    const inodeColumn = table === 'unix' ? 6 : 9;
    for (const line of text.split('\n').slice(1)) {
      const inode = line.trim().split(/\s+/)[inodeColumn];
      if (inode) live.add(inode);
    }
  }
  return live;
}

/** This process's socket descriptors whose connection is gone (reset or closed) but which are still open. */
function deadSockets(): number {
  const live = liveSocketInodes();
  let dead = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    let target = '';
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue;
    }
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m && !live.has(m[1]!)) dead++;
  }
  return dead;
}

describe('webhook delivery metrics', () => {
  it('the outbox backlog shows an undelivered event, then empties once the dispatcher delivers it', async () => {
    receiver.log.length = 0;
    const { key } = await accountWithEndpoint();
    await finishedVideo(key);
    const before = await scrape(gw);
    expect(total(before, 'gateway_webhook_outbox_pending')).toBeGreaterThanOrEqual(1);
    expect(total(before, 'gateway_webhook_outbox_oldest_pending_seconds')).toBeGreaterThanOrEqual(0);
    gw.services.webhooks.dispatcher.start();
    await until(() => receiver.accepted().length === 1);
    await until(async () => total(await scrape(gw), 'gateway_webhook_outbox_pending') === 0);
    const after = await scrape(gw);
    expect(total(after, 'gateway_webhook_outbox_oldest_pending_seconds')).toBe(0);
    expect(delta(before, after, 'gateway_webhook_deliveries_total', { event: 'video.completed', outcome: 'delivered' })).toBe(1);
    expect(delta(before, after, 'gateway_webhook_delivery_duration_seconds_count', { result: 'ok' })).toBe(1);
  });

  it('counts a failed attempt as retrying, and the last failed one as gave_up; labels carry no URL or id', async () => {
    receiver.log.length = 0;
    const before = await scrape(gw);
    receiver.statuses = [500, 200];
    const first = await accountWithEndpoint();
    await finishedVideo(first.key);
    await until(() => receiver.accepted().length === 1);
    receiver.statuses = [500, 502];
    const second = await accountWithEndpoint();
    await finishedVideo(second.key);
    await until(async () => (await deliveries(second.endpoint)).data[0]?.state === 'failed');
    const after = await scrape(gw);
    const moved = (outcome: string) => delta(before, after, 'gateway_webhook_deliveries_total', { event: 'video.completed', outcome });
    expect([moved('delivered'), moved('retrying'), moved('gave_up')]).toEqual([1, 2, 1]);
    expect(delta(before, after, 'gateway_webhook_delivery_duration_seconds_count', { result: 'error' })).toBe(3);
    const labels = [...after.keys()].filter((k) => k.startsWith('gateway_webhook')).join('\n');
    expect(labels).not.toContain('127.0.0.1');
    expect(labels).not.toContain(first.endpoint);
  });
});

describe('receivers that reset the connection', () => {
  beforeAll(() => gw.services.webhooks.dispatcher.start());

  it('a reset mid-answer (after a 200 status line) is a failed attempt, retried and then delivered once', async () => {
    receiver.log.length = 0;
    receiver.resetCount = 0;
    receiver.resets = 1;
    const { key, endpoint } = await accountWithEndpoint();
    await finishedVideo(key);
    await until(() => receiver.accepted().length === 1);
    // The receiver has answered; the dispatcher records the delivery once it has read that answer.
    await until(async () => (await deliveries(endpoint)).data[0]?.state !== 'pending');
    expect(receiver.resetCount).toBe(1);
    const log = await deliveries(endpoint);
    expect(log.data[0]).toMatchObject({ state: 'delivered', attempts: 2 });
    expect(log.attempts.at(-1)).toMatchObject({ attempt: 1, status: 200, error: 'the connection broke before the answer ended' });
    expect((await call(gw, 'GET', '/health')).status).toBe(200);
  });

  it('many resets leave no descriptor behind and the gateway keeps serving', async () => {
    // Warm up once so lazily opened descriptors (pools, files) are not counted as a leak.
    receiver.log.length = 0;
    const warm = await accountWithEndpoint();
    await finishedVideo(warm.key);
    await until(() => receiver.accepted().length === 1);
    const deadBefore = deadSockets();
    receiver.log.length = 0;
    receiver.resetCount = 0;
    receiver.resets = 10;
    const keys = await Promise.all(Array.from({ length: 5 }, () => accountWithEndpoint()));
    await Promise.all(keys.map((k) => finishedVideo(k.key)));
    // Each event: a reset, then (max_attempts 2) either a reset again or a delivery.
    await until(async () => {
      const logs = await Promise.all(keys.map((k) => deliveries(k.endpoint)));
      return logs.every((l) => l.data[0] && l.data[0].state !== 'pending');
    }, 15_000);
    expect(receiver.resetCount).toBe(10);
    // Sockets the resets killed are gone; allow a few for pooled keep-alive connections.
    // A socket whose connection was reset but whose descriptor nobody closed is a leak; pooled
    // keep-alive connections (to the simulator, the gateway) are live and do not count.
    await until(() => deadSockets() <= deadBefore, 5_000);
    expect((await call(gw, 'GET', '/health')).status).toBe(200);
  });
});
