/** delta-seconds (RFC 9110 10.2.3); a fraction is tolerated, never a sign, exponent or hex. */
const DELTA = /^\d+(?:\.\d+)?$/;
/** Every HTTP-date form (IMF-fixdate, RFC 850, asctime) opens with a day name. */
const HTTP_DATE = /^[A-Za-z]{3}/;

/**
 * How long an upstream asks us to wait, in seconds (fractions kept; callers round): Azure's
 * `retry-after-ms`, then the standard `Retry-After` as delta-seconds or an HTTP date. Vendors add
 * their own hints after this (OpenAI's x-ratelimit-reset-*, Google's RetryInfo). A value in any
 * other form is ignored rather than guessed at (`Number` would read "0x10" or "1e9", `Date.parse`
 * would read "-5" as a date). How long is not judged here: the 502 that passes a wait on to
 * clients caps it (routing/failover.ts).
 */
export function retryAfterSeconds(headers: Record<string, string>, now = Date.now()): number | undefined {
  const ms = headers['retry-after-ms']?.trim();
  if (ms !== undefined && DELTA.test(ms)) return Number(ms) / 1000;
  const raw = headers['retry-after']?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (DELTA.test(raw)) return Number(raw);
  if (!HTTP_DATE.test(raw)) return undefined;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - now) / 1000);
}
