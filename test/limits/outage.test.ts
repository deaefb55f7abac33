import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisRateLimiter, type LimiterLogger } from '../../src/limits/redis.js';
import type { LimitScope } from '../../src/limits/types.js';
import { waitFor } from '../helpers/process.js';
import { dropPrefix, ensureRedis, RedisRelay, uniquePrefix } from './redis-helper.js';

/**
 * Two instances, each reaching Redis through its own TCP relay, hammer one key limited to 60
 * requests a minute; the relays are cut for 90 s of window time and brought back. Window time is
 * a test clock (three simulated minutes take a few real seconds); Redis is real.
 */
const prefix = uniquePrefix();
const quiet: LimiterLogger = { warn: () => undefined, info: () => undefined };
const LIMIT = 60;
const STEP_MS = 250;
const TRIES_PER_STEP = 2; // per instance: 8 a second each, far over 1 a second

beforeAll(async () => {
  await ensureRedis();
});
afterAll(async () => {
  await dropPrefix(prefix);
});

/** The most admissions found in any 60-second window. */
function busiestMinute(times: number[]): number {
  const sorted = [...times].sort((x, y) => x - y);
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    while (sorted[hi]! - sorted[lo]! >= 60_000) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

describe('limits during a Redis outage, across two instances', () => {
  it('keep the combined rate within 1.5x of the limit before, during and after the outage', async () => {
    const relays = [new RedisRelay(), new RedisRelay()];
    for (const r of relays) await r.start();
    const clock = { t: 1_700_000_000_000 };
    const instances = relays.map(
      (r) => new RedisRateLimiter({ url: r.url, keyPrefix: prefix, now: () => clock.t, logger: quiet, coolDownMs: 20, heartbeatMs: 50, commandTimeoutMs: 200 }),
    );
    const scopes: LimitScope[] = [{ id: 'key:hammered', quota: { rpm: LIMIT } }];
    const admitted: number[] = [];
    const outage: number[] = [];
    let realPause = 0;
    const run = async (ms: number, into?: number[]) => {
      for (let elapsed = 0; elapsed < ms; elapsed += STEP_MS) {
        clock.t += STEP_MS;
        for (const inst of instances) {
          for (let i = 0; i < TRIES_PER_STEP; i++) {
            if ((await inst.admit('video', scopes, 0)).allowed) {
              admitted.push(clock.t);
              into?.push(clock.t);
            }
          }
        }
        if (realPause) await new Promise((r) => setTimeout(r, realPause));
      }
    };
    try {
      await waitFor(() => instances.every((i) => i.connected && i.instances === 2), 'both instances to register with Redis', 5_000);
      await run(60_000); // shared: a full minute
      for (const r of relays) await r.stop();
      realPause = 2; // lets the clients notice the lost connections
      await run(90_000, outage);
      expect(instances.every((i) => i.isDegraded)).toBe(true);
      for (const r of relays) await r.start();
      await waitFor(() => instances.every((i) => i.connected), 'both instances to reconnect', 10_000);
      realPause = 0;
      await run(60_000);
      expect(instances.some((i) => i.isDegraded)).toBe(false);

      const busiest = busiestMinute(admitted);
      expect(busiest).toBeLessThanOrEqual(LIMIT * 1.5);
      // Limits that fail safe still serve: the outage admitted about the limit's rate, not nothing.
      expect(outage.length).toBeGreaterThanOrEqual(LIMIT * 1.5 * 0.5);
      // Printed for the README's reliability figures.
      console.info(`redis outage: busiest minute ${busiest} admissions against ${LIMIT} rpm; ${outage.length} admitted in the 90 s outage`);
    } finally {
      await Promise.all(instances.map((i) => i.close()));
      for (const r of relays) await r.stop();
    }
  }, 60_000);
});
