import { describe, expect, it } from 'vitest';
import { RedisRateLimiter } from '../../src/limits/redis.js';
import type { LimitScope } from '../../src/limits/types.js';
import { RedisRelay, redisTestKeys } from './redis-helper.js';

const { prefix, open } = redisTestKeys<RedisRateLimiter>();

/** Commands ioredis holds for the limiter: sent and unanswered, or waiting for a connection. */
function queued(l: RedisRateLimiter): number {
  const client = (l as unknown as { redis: { commandQueue: { length: number }; offlineQueue: { length: number } } }).redis;
  return client.commandQueue.length + client.offlineQueue.length;
}

describe('RedisRateLimiter while Redis hangs (connection open, no answer)', () => {
  it('answers from the local windows without waiting on Redis, and queues nothing behind the stuck command', async () => {
    const relay = new RedisRelay();
    await relay.start();
    const l = new RedisRateLimiter({ url: relay.url, keyPrefix: `${prefix}hang:`, commandTimeoutMs: 200, coolDownMs: 300, logger: { warn: () => undefined, info: () => undefined } });
    open.push(l);
    const s: LimitScope[] = [{ id: 'key:hang', quota: { rpm: 10_000 } }];
    for (let i = 0; i < 100 && !l.connected; i++) await new Promise((r) => setTimeout(r, 20));
    expect(l.connected).toBe(true);
    try {
      relay.stall({ newConnectionsToo: true });
      // The first admission finds out: it waits for the command timeout, then answers locally.
      expect((await l.admit('chat', s, 0)).allowed).toBe(true);
      const waits: number[] = [];
      const until = Date.now() + 2_000;
      while (Date.now() < until) {
        const started = Date.now();
        expect((await l.admit('chat', s, 0)).allowed).toBe(true);
        waits.push(Date.now() - started);
        await new Promise((r) => setTimeout(r, 20));
      }
      // Each cool-down used to end with an admission waiting a whole command timeout on the hung
      // connection, and leaving its command queued there.
      expect(Math.max(...waits)).toBeLessThan(100);
      expect(queued(l)).toBeLessThanOrEqual(2);
      expect(l.isDegraded).toBe(true);

      relay.resume();
      for (let i = 0; i < 100 && l.isDegraded; i++) {
        await new Promise((r) => setTimeout(r, 50));
        await l.admit('chat', s, 0);
      }
      expect(l.isDegraded).toBe(false);
    } finally {
      await relay.stop();
    }
  });
});
