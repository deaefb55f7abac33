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

/**
 * Whether a request refused after its admission gives the admission back (one request and its
 * tokens), so that work not done does not spend quota. It does for the gateway's own refusals and
 * the upstream's refusals of the request itself: any 4xx (validation, 402 balance or key budget,
 * an upstream's 400 `upstream_rejected`, moderation) and the gateway shedding load (503
 * `overloaded`). It does not for failures after the upstreams were put to work (502/503/504: the
 * limit protects them too), for the gateway's own deadline (408), or for a client that left.
 */
export function refusalGivesBack(e: unknown): boolean {
  if (!(e instanceof GatewayError)) return false;
  if (e.code === 'overloaded') return true;
  return e.status >= 400 && e.status < 500 && e.status !== 408;
}

/**
 * Gives back an admission whose request was refused after it (see refusalGivesBack) and returns the
 * x-ratelimit-* headers for the refused answer: the admission's headers still count the request,
 * so those of the windows after the give-back replace them (learned from the give-back's own
 * reply). A give-back that fails leaves the admission counted, and its headers true.
 */
export async function giveBack(
  limiter: RateLimiter,
  family: LimitFamily,
  scopes: readonly LimitScope[],
  tokens: number,
  admission: Admission,
  onError?: (e: unknown) => void,
): Promise<Record<string, string>> {
  let after: Record<string, string> | undefined;
  try {
    after = await limiter.release(family, scopes, tokens, admission.second);
  } catch (e) {
    onError?.(e);
  }
  return after ? { ...admission.headers, ...after } : admission.headers;
}
