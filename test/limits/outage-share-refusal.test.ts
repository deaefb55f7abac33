import { describe, expect, it } from 'vitest';
import type { LimitDecision } from '../../src/limits/decision.js';
import { RedisRateLimiter } from '../../src/limits/redis.js';
import { refusalError } from '../../src/limits/refusal.js';
import type { LimitScope } from '../../src/limits/types.js';
import { redisTestKeys } from './redis-helper.js';

/**
 * While Redis is down each instance admits its share of a quota (fallback.ts). Its answers still
 * name the quota as configured: the limit a client was given does not change with the number of
 * gateway instances; what is left (remaining, the refusal) is this instance's.
 */
const T0 = 1_700_000_000_000;
const { prefix, open } = redisTestKeys<RedisRateLimiter>();
const quiet = { warn: () => undefined, info: () => undefined };

describe('RedisRateLimiter in an outage, on this instance\'s share', () => {
  it('names the configured limit in its headers and its refusal, counting remaining on the share', async () => {
    const clock = { t: T0 };
    const l = new RedisRateLimiter({ url: 'redis://127.0.0.1:1', keyPrefix: prefix, now: () => clock.t, logger: quiet });
    open.push(l);
    // Redis last reported two live instances: each takes half of every quota.
    l.fallback.instances = 2;
    const s: LimitScope[] = [{ id: 'key:shared', quota: { rpm: 40, tpm: 100_000 } }];

    const first = await l.admit('chat', s, 100);
    expect(first.allowed).toBe(true);
    expect(first.headers).toMatchObject({
      'x-ratelimit-limit-requests': '40',
      'x-ratelimit-remaining-requests': '19',
      'x-ratelimit-limit-tokens': '100000',
      'x-ratelimit-remaining-tokens': '49900',
    });
    for (let i = 0; i < 19; i++) expect((await l.admit('chat', s, 100)).allowed).toBe(true);

    const refused = (await l.admit('chat', s, 100)) as LimitDecision;
    expect(refused.allowed).toBe(false);
    expect(refused.headers['x-ratelimit-limit-requests']).toBe('40');
    expect(refused.headers['x-ratelimit-remaining-requests']).toBe('0');
    const err = refusalError(refused);
    expect(err.status).toBe(429);
    expect(err.message).toMatch(/requests per minute \(RPM\) on this API key: limit 40 \(temporarily 20\), used 20, requested 1\./);
    expect(err.message).not.toMatch(/limit 20/);

    // A give-back's headers (the refused answer after an admission) name it the same way.
    const after = await l.release('chat', s, 100, first.second);
    expect(after).toMatchObject({ 'x-ratelimit-limit-requests': '40', 'x-ratelimit-remaining-requests': '1' });
  });
});
