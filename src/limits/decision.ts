import type { Admission, LimitFamily, LimitScope } from './types.js';
import { WINDOW_SECONDS, type Dimension } from './window.js';

/**
 * What both limiter backends answer. `reason` and `message` travel with a refusal so the caller
 * can render it (see refusal.ts); they are optional so a plain Admission stays valid.
 */
export interface LimitDecision extends Admission {
  /** requests / tokens: the window is full for now; too_large: the request can never fit. */
  reason?: 'requests' | 'tokens' | 'too_large';
  message?: string;
}

/** The answer when no scope limits anything: no headers, since there is no limit to describe. */
export function admittedUnlimited(): LimitDecision {
  // A fresh object each time: callers may add to the headers they get.
  return { allowed: true, retryAfterSeconds: 0, headers: {} };
}

/**
 * Durations the way OpenAI writes x-ratelimit-reset-* (Go's time.Duration format at millisecond
 * precision): "0s", "250ms", "1s", "1.5s", "59.2s", "1m0s", "6m0s", "1h2m3s". Written on every
 * limited answer (two headers), so whole-number arithmetic only: no toFixed, no regular expression.
 */
export function formatDuration(msIn: number): string {
  const ms = Math.max(0, Math.round(msIn));
  // Not produced by the windows; a header value must still be a duration.
  if (ms === 0 || !Number.isFinite(ms)) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const secs = seconds(ms % 60_000);
  if (h > 0) return `${h}h${m}m${secs}s`;
  if (m > 0) return `${m}m${secs}s`;
  return `${secs}s`;
}

/** Whole milliseconds as seconds with the decimals needed and no more: 3000 "3", 1500 "1.5", 59250 "59.25", 1001 "1.001". */
function seconds(ms: number): string {
  const whole = Math.floor(ms / 1000);
  const frac = ms % 1000;
  if (frac === 0) return String(whole);
  if (frac % 100 === 0) return `${whole}.${frac / 100}`;
  if (frac % 10 === 0) return `${whole}.${frac < 100 ? '0' : ''}${frac / 10}`;
  return `${whole}.${frac < 10 ? '00' : frac < 100 ? '0' : ''}${frac}`;
}

/** Retry-After in whole seconds, rounded up and never 0 (a 0 would invite an instant retry). */
export function retrySeconds(waitMs: number): number {
  return Math.max(1, Math.ceil(waitMs / 1000));
}

/**
 * Picks, per dimension, the scope with the least room left: that is the one whose numbers a
 * client should pace itself by. Reused across calls by the in-memory limiter (no allocation).
 */
export class TightestScope {
  private reqLimit = 0;
  private reqRemaining = Infinity;
  private reqResetMs = 0;
  private tokLimit = 0;
  private tokRemaining = Infinity;
  private tokResetMs = 0;

  clear(): this {
    this.reqLimit = 0;
    this.reqRemaining = Infinity;
    this.reqResetMs = 0;
    this.tokLimit = 0;
    this.tokRemaining = Infinity;
    this.tokResetMs = 0;
    return this;
  }

  /** `limit` is what `used` counts against; `shown` the limit the headers name (LimitScope.configured). */
  offer(dim: Dimension, limit: number, used: number, resetMs: number, shown = limit): void {
    const remaining = Math.max(0, limit - used);
    if (dim === 'requests') {
      if (remaining < this.reqRemaining || (remaining === this.reqRemaining && resetMs > this.reqResetMs)) {
        this.reqLimit = shown;
        this.reqRemaining = remaining;
        this.reqResetMs = resetMs;
      }
    } else if (remaining < this.tokRemaining || (remaining === this.tokRemaining && resetMs > this.tokResetMs)) {
      this.tokLimit = shown;
      this.tokRemaining = remaining;
      this.tokResetMs = resetMs;
    }
  }

  headers(): Record<string, string> {
    const h: Record<string, string> = {};
    if (this.reqLimit > 0) {
      h['x-ratelimit-limit-requests'] = String(this.reqLimit);
      h['x-ratelimit-remaining-requests'] = String(this.reqRemaining);
      h['x-ratelimit-reset-requests'] = formatDuration(this.reqResetMs);
    }
    if (this.tokLimit > 0) {
      h['x-ratelimit-limit-tokens'] = String(this.tokLimit);
      h['x-ratelimit-remaining-tokens'] = String(this.tokRemaining);
      h['x-ratelimit-reset-tokens'] = formatDuration(this.tokResetMs);
    }
    return h;
  }
}

/** Which scope a refusal is about, in words a client understands (ids stay out of messages). */
export function scopeLabel(scope: LimitScope): string {
  if (scope.id.startsWith('key:')) return 'this API key';
  if (scope.id.startsWith('account:')) return 'this account';
  return `scope ${scope.id}`;
}

/** The first scope whose tokens-per-minute quota is below what the request needs on its own. */
export function findTooLarge(scopes: readonly LimitScope[], tokens: number): LimitScope | undefined {
  for (const s of scopes) {
    const tpm = s.quota.tpm ?? 0;
    if (tpm > 0 && tokens > tpm) return s;
  }
  return undefined;
}

export function tooLargeDecision(
  family: LimitFamily,
  scope: LimitScope,
  tokens: number,
  headers: Record<string, string>,
): LimitDecision {
  return {
    allowed: false,
    reason: 'too_large',
    // Retrying cannot help; a full window is the most honest wait to quote to a caller that retries anyway.
    retryAfterSeconds: WINDOW_SECONDS,
    headers,
    message:
      `Request too large for ${family}: it needs ${tokens} tokens but ${scopeLabel(scope)} allows ` +
      `${scope.quota.tpm} tokens per minute, so it can never be admitted. Reduce the input or max_tokens.`,
  };
}

export function refusedDecision(
  family: LimitFamily,
  scope: LimitScope,
  dim: Dimension,
  used: number,
  requested: number,
  waitMs: number,
  headers: Record<string, string>,
): LimitDecision {
  const limit = dim === 'requests' ? scope.quota.rpm : scope.quota.tpm;
  // An instance's share in a Redis outage is not a limit the client was given: the configured one is
  // named, and the share said to be temporary (else "limit 40, used 20" would read as a fault).
  const configured = (dim === 'requests' ? scope.configured?.rpm : scope.configured?.tpm) ?? limit;
  const named = configured === limit ? `${limit}` : `${configured} (temporarily ${limit})`;
  const what = dim === 'requests' ? 'requests per minute (RPM)' : 'tokens per minute (TPM)';
  const seconds = retrySeconds(waitMs);
  return {
    allowed: false,
    reason: dim,
    retryAfterSeconds: seconds,
    headers,
    message:
      `Rate limit reached for ${family} ${what} on ${scopeLabel(scope)}: limit ${named}, used ${used}, ` +
      `requested ${requested}. Please try again in ${seconds}s.`,
  };
}

/** Normalises a token count: negative, fractional or non-numeric input never corrupts a window. */
export function cleanTokens(tokens: number): number {
  return Number.isFinite(tokens) && tokens > 0 ? Math.ceil(tokens) : 0;
}

/** True when a scope limits anything at all (0 or absent means unlimited). */
export function isLimited(scope: LimitScope): boolean {
  return (scope.quota.rpm ?? 0) > 0 || (scope.quota.tpm ?? 0) > 0;
}
