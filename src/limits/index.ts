import { MemoryRateLimiter } from './memory.js';
import type { LimiterLogger } from './redis.js';
import type { RateLimiter } from './types.js';

export type { Admission, LimitFamily, LimitScope, Quota, RateLimiter } from './types.js';
export type { LimitDecision } from './decision.js';
export { formatDuration } from './decision.js';
export { MemoryRateLimiter, type MemoryLimiterOptions } from './memory.js';
// Types only: the class (and ioredis, about 23 MB of RSS) loads when the config selects Redis.
export type { RedisRateLimiter, RedisLimiterOptions, LimiterLogger } from './redis.js';
export { admitOrThrow, refusalError } from './refusal.js';
export { scopesFor } from './scopes.js';

export interface LimiterConfig {
  backend: 'memory' | 'redis';
  redis_url?: string;
}

/**
 * Builds the configured limiter. `memory` limits per process; `redis` shares the quotas between
 * every instance pointed at the same Redis and falls back to per-process limits while it is away.
 */
export async function createLimiter(
  cfg: LimiterConfig,
  opts: { logger?: LimiterLogger; keyPrefix?: string } = {},
): Promise<RateLimiter> {
  if (cfg.backend === 'redis') {
    const { RedisRateLimiter } = await import('./redis.js');
    return new RedisRateLimiter({ url: cfg.redis_url, logger: opts.logger, keyPrefix: opts.keyPrefix });
  }
  return new MemoryRateLimiter();
}
