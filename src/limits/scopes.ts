import type { AuthContext } from '../auth/types.js';
import type { RateLimits } from '../store/types.js';
import type { LimitScope, Quota, QuotaFamily } from './types.js';

/**
 * The scopes a request is counted against: its API key and its account. Each takes the quota set
 * on that key or account for the family, field by field, and falls back to the configured default
 * where nothing is set (0 set explicitly means unlimited).
 */
export function scopesFor(ctx: AuthContext, family: QuotaFamily, defaults: Quota): LimitScope[] {
  return [
    { id: `key:${ctx.key.id}`, quota: over(ctx.key.limits, family, defaults) },
    { id: `account:${ctx.account.id}`, quota: over(ctx.account.limits, family, defaults) },
  ];
}

function over(limits: RateLimits | null | undefined, family: QuotaFamily, defaults: Quota): Quota {
  const set = limits?.[family] as Quota | undefined;
  if (!set) return defaults;
  return { rpm: set.rpm ?? defaults.rpm, tpm: set.tpm ?? defaults.tpm };
}
