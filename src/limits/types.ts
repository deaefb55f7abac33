/**
 * Rate limiting. Each capability (embeddings, chat, video) has its own family of windows, so a
 * burst on one never spends another's quota. A request is admitted only if every scope it belongs
 * to (its key and its account) has room for one more request and for its estimated tokens.
 */
/** The families a client's quota (per key, per account) is configured for. */
export type QuotaFamily = 'embeddings' | 'chat' | 'video';
/** Every family of windows: the clients' ones, and vendor callbacks per job (not a client quota). */
export type LimitFamily = QuotaFamily | 'callback';

export interface Quota {
  /** Requests per minute; undefined or 0 = unlimited. */
  rpm?: number;
  /** Tokens per minute; undefined or 0 = unlimited. */
  tpm?: number;
}

export interface LimitScope {
  /** Stable id of the scope, e.g. "key:<id>" or "account:<id>". */
  id: string;
  quota: Quota;
  /**
   * Set when `quota` is only a part of the scope's quota (an instance's share of it while the Redis
   * limiter is down, limits/fallback.ts): the quota as configured, which the x-ratelimit-limit-*
   * headers and a refusal's message name, so that clients see one limit through an outage.
   */
  configured?: Quota;
}

export interface Admission {
  allowed: boolean;
  /** When refused: whole seconds until the request would fit (>= 1). */
  retryAfterSeconds: number;
  /** x-ratelimit-* headers as OpenAI sends them, for the tightest scope. */
  headers: Record<string, string>;
  /**
   * When admitted: the window second (on the limiter's clock) the admission's tokens were counted
   * in. A correction hands it back, so that tokens given back come out of that second's bucket.
   */
  second?: number;
}

export interface RateLimiter {
  /** Checks every scope and, when all have room, consumes 1 request and `tokens` tokens from each. */
  admit(family: LimitFamily, scopes: readonly LimitScope[], tokens: number): Promise<Admission>;
  /**
   * Corrects a previous admission once the vendor reported actual usage (delta may be negative).
   * `second` is the admission's (`Admission.second`): a negative delta comes out of that second's
   * bucket only, and out of nothing once it left the window. Taken from the newest buckets instead,
   * a late correction (a chat stream that outlived its minute) would free tokens that later
   * requests used. Without it, from the newest buckets first.
   */
  adjustTokens(family: LimitFamily, scopes: readonly LimitScope[], delta: number, second?: number): Promise<void>;
  /**
   * Gives back an admission (one request and `tokens`) when the request was refused after it was
   * admitted (by the gateway, or by the upstream: limits/refusal.ts): work not done does not spend
   * quota. `second` is the admission's (`Admission.second`): the request and tokens come out of that
   * second's buckets only, and out of nothing once it left the window, since a refusal can come long
   * after the admission (an upstream timed out before the next one refused). Without it, from the
   * newest buckets first.
   *
   * Resolves to the x-ratelimit-* headers of the windows after the give-back, for the refused
   * request's own answer (the admission's headers still count what was given back), or undefined
   * when the limiter could not learn them (the give-back itself failed: the admission's headers
   * are then still the truth). Learned from the give-back's own reply: no extra call.
   */
  release(family: LimitFamily, scopes: readonly LimitScope[], tokens: number, second?: number): Promise<Record<string, string> | undefined>;
  close(): Promise<void>;
}
