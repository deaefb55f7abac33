/**
 * How long an upstream asks us to wait, in seconds (fractions kept; callers round): Azure's
 * `retry-after-ms`, then the standard `Retry-After` as delta-seconds or an HTTP date. Vendors add
 * their own hints after this (OpenAI's x-ratelimit-reset-*, Google's RetryInfo).
 */
export function retryAfterSeconds(headers: Record<string, string>, now = Date.now()): number | undefined {
  const ms = headers['retry-after-ms'];
  if (ms !== undefined && ms.trim() !== '') {
    const n = Number(ms);
    if (Number.isFinite(n) && n >= 0) return n / 1000;
  }
  const raw = headers['retry-after'];
  if (raw === undefined || raw.trim() === '') return undefined;
  const secs = Number(raw);
  if (Number.isFinite(secs) && secs >= 0) return secs;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - now) / 1000);
}
