import { describe, expect, it } from 'vitest';
import { MemoryRateLimiter } from '../../src/limits/memory.js';
import { RedisRateLimiter } from '../../src/limits/redis.js';
import type { LimitDecision } from '../../src/limits/decision.js';
import type { LimitScope, Quota } from '../../src/limits/types.js';
import { REDIS_URL, redisTestKeys } from './redis-helper.js';

/**
 * A request that alone needs more tokens than a minute allows (400 request_too_large) is described
 * by the same x-ratelimit-* headers whichever limiter refuses it, and counts nowhere.
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

function limiter(clock: { t: number }, url = REDIS_URL): RedisRateLimiter {
  const l = new RedisRateLimiter({ url, keyPrefix: prefix, now: () => clock.t, logger: quiet, commandTimeoutMs: COMMAND_TIMEOUT_MS });
  open.push(l);
  return l;
}

async function ready(l: RedisRateLimiter): Promise<void> {
  for (let i = 0; i < 100 && !l.connected; i++) await new Promise((r) => setTimeout(r, 20));
  expect(l.connected).toBe(true);
}

let n = 0;
const scope = (quota: Quota, kind = 'key'): LimitScope => ({ id: `${kind}:big${++n}`, quota });

describe('RedisRateLimiter: a request too large for a minute', () => {
  it('answers a request too large for a whole minute with the x-ratelimit-* headers the in-process limiter gives, consuming nothing', async () => {
    const clock = { t: T0 + 250 };
    const l = limiter(clock);
    const memory = new MemoryRateLimiter({ now: () => clock.t });
    const s = [scope({ rpm: 10, tpm: 1000 }), scope({ rpm: 20, tpm: 5000 }, 'account')];
    await ready(l);
    expect((await l.admit('embeddings', s, 300)).allowed).toBe(true);
    expect((await memory.admit('embeddings', s, 300)).allowed).toBe(true);
    clock.t += 2_000;
    const big = (await l.admit('embeddings', s, 1001)) as LimitDecision;
    expect(big.reason).toBe('too_large');
    expect(big.headers).toEqual({
      'x-ratelimit-limit-requests': '10',
      'x-ratelimit-remaining-requests': '9',
      'x-ratelimit-reset-requests': '57.75s',
      'x-ratelimit-limit-tokens': '1000',
      'x-ratelimit-remaining-tokens': '700',
      'x-ratelimit-reset-tokens': '57.75s',
    });
    expect(big).toEqual(await memory.admit('embeddings', s, 1001));
    // Nothing was counted: the next request sees the window as the first one left it.
    const next = await l.admit('embeddings', s, 700);
    expect(next.allowed).toBe(true);
    expect(next.headers['x-ratelimit-remaining-requests']).toBe('8');
    expect(next.headers['x-ratelimit-remaining-tokens']).toBe('0');
  });

  it('answers a too-large request with headers during an outage too, and never admits it, whatever its share', async () => {
    const clock = { t: T0 };
    const l = limiter(clock, 'redis://127.0.0.1:1');
    l.fallback.instances = 2;
    const s = [scope({ rpm: 4, tpm: 100 })];
    const big = (await l.admit('chat', s, 150)) as LimitDecision;
    expect(big.allowed).toBe(false);
    expect(big.reason).toBe('too_large');
    expect(big.headers['x-ratelimit-limit-tokens']).toBeDefined();
    expect(big.headers['x-ratelimit-remaining-requests']).toBeDefined();
    // Its share of requests (4 / 2) is whole: the refusal counted nothing.
    expect((await l.admit('chat', s, 10)).allowed).toBe(true);
    expect((await l.admit('chat', s, 10)).allowed).toBe(true);
    expect((await l.admit('chat', s, 10)).allowed).toBe(false);
  });
});
