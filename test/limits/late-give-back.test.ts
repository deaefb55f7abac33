import { describe, expect, it } from 'vitest';
import { MemoryRateLimiter } from '../../src/limits/memory.js';
import { RedisRateLimiter } from '../../src/limits/redis.js';
import type { LimitScope, RateLimiter } from '../../src/limits/types.js';
import { REDIS_URL, redisTestKeys } from './redis-helper.js';

/**
 * A give-back (`release`) comes when the request is refused, which can be long after its admission
 * (an upstream that timed out before the next one refused the request): it takes the request and
 * its tokens out of the admission's own second, and nothing once that second has left the window.
 * Taken from the newest buckets instead, it freed what later requests used (over-admitting for up
 * to a minute), or, for an admission already out of the window, freed a second request.
 */
const T0 = 1_700_000_000_000;
const { prefix, open } = redisTestKeys<RedisRateLimiter>();
const quiet = { warn: () => undefined, info: () => undefined };
/**
 * The command timeout of the limiters whose decisions are compared exactly. The default (500 ms) is
 * measured in this process: held that long by a busy machine, it times a command out, the limiter
 * decides on its local windows for a cool-down, and the comparison fails though Redis answered.
 */
const COMMAND_TIMEOUT_MS = 5_000;
let run = 0;

async function limiter(backend: 'memory' | 'redis', clock: { t: number }): Promise<RateLimiter> {
  if (backend === 'memory') return new MemoryRateLimiter({ now: () => clock.t });
  const redis = new RedisRateLimiter({ url: REDIS_URL, keyPrefix: `${prefix}${++run}:`, now: () => clock.t, logger: quiet, commandTimeoutMs: COMMAND_TIMEOUT_MS });
  open.push(redis);
  for (let i = 0; i < 100 && !redis.connected; i++) await new Promise((r) => setTimeout(r, 20));
  expect(redis.connected).toBe(true);
  return redis;
}

const scopes: LimitScope[] = [{ id: 'key:late', quota: { rpm: 3, tpm: 1_000 } }];

for (const backend of ['memory', 'redis'] as const) {
  describe(`a give-back long after its admission (${backend} limiter)`, () => {
    it('takes nothing once the admission has left the window', async () => {
      const clock = { t: T0 + 250 };
      const l = await limiter(backend, clock);
      const first = await l.admit('chat', scopes, 100);
      expect(first.allowed).toBe(true);
      clock.t += 30_000;
      for (let i = 0; i < 2; i++) expect((await l.admit('chat', scopes, 100)).allowed).toBe(true);
      // The first admission's second has left the window; the two later ones are still in it.
      clock.t += 31_000;
      await l.release('chat', scopes, 100, first.second);
      const third = await l.admit('chat', scopes, 100);
      expect(third.allowed).toBe(true);
      expect(third.headers['x-ratelimit-remaining-requests']).toBe('0');
      expect(third.headers['x-ratelimit-remaining-tokens']).toBe('700');
      expect((await l.admit('chat', scopes, 100)).allowed, 'a fourth request in one minute').toBe(false);
    });

    it("takes from the admission's own second, so the window is right when that second leaves it", async () => {
      const clock = { t: T0 + 250 };
      const l = await limiter(backend, clock);
      const first = await l.admit('chat', scopes, 100);
      clock.t += 30_000;
      for (let i = 0; i < 2; i++) expect((await l.admit('chat', scopes, 100)).allowed).toBe(true);
      clock.t += 1_000;
      await l.release('chat', scopes, 100, first.second);
      // The first admission's second leaves the window: the two later ones are all it holds.
      clock.t += 30_000;
      const third = await l.admit('chat', scopes, 100);
      expect(third.allowed).toBe(true);
      expect(third.headers['x-ratelimit-remaining-requests']).toBe('0');
      expect(third.headers['x-ratelimit-remaining-tokens']).toBe('700');
      expect((await l.admit('chat', scopes, 100)).allowed, 'a fourth request in one minute').toBe(false);
    });
  });
}
