import { errors, GatewayError } from '../core/errors.js';
import { limiterRefusals } from '../ops/metrics.js';
import type { LimitDecision } from './decision.js';
import type { Admission, LimitFamily, LimitScope, RateLimiter } from './types.js';

/**
 * The error a refused admission becomes:
 * - the window is full: 429 rate_limit_error with Retry-After and the x-ratelimit-* headers;
 * - the request alone needs more tokens than a whole minute allows: 400 invalid_request_error,
 *   code request_too_large, because no amount of waiting would let it through and a 429 would
 *   send well-behaved clients into a retry loop.
 */
export function refusalError(a: Admission): GatewayError {
  const d = a as LimitDecision;
  if (d.reason === 'too_large') {
    const err = errors.invalidRequest(d.message ?? 'Request too large for the rate limit.', undefined, 'request_too_large');
    Object.assign(err.headers, a.headers);
    return err;
  }
  return errors.rateLimited(d.message ?? 'Rate limit reached; please retry later.', a.retryAfterSeconds, a.headers);
}

/**
 * Admits or throws the matching GatewayError. On success the returned admission's headers are the
 * x-ratelimit-* values to put on the response.
 */
export async function admitOrThrow(
  limiter: RateLimiter,
  family: LimitFamily,
  scopes: readonly LimitScope[],
  tokens: number,
): Promise<Admission> {
  const a = await limiter.admit(family, scopes, tokens);
  if (!a.allowed) {
    limiterRefusals.inc({ family, reason: (a as LimitDecision).reason ?? 'requests' });
    throw refusalError(a);
  }
  return a;
}
