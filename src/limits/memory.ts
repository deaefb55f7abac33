import { elapsedMs } from '../core/clock.js';
import {
  cleanTokens,
  findTooLarge,
  isLimited,
  refusedDecision,
  TightestScope,
  tooLargeDecision,
  admittedUnlimited,
  type LimitDecision,
} from './decision.js';
import type { LimitFamily, LimitScope, RateLimiter } from './types.js';
import { SlidingWindow, WINDOW_SECONDS, type Dimension } from './window.js';

export interface MemoryLimiterOptions {
  /** Unix milliseconds; injectable so tests can move time. */
  now?: () => number;
}

/**
 * Per-process limiter: one sliding window per (family, scope). Everything happens synchronously on
 * the calling tick with no timers; windows idle for a whole minute are dropped by a sweep that runs
 * at most once a minute, so memory follows the number of recently active keys and accounts.
 */
export class MemoryRateLimiter implements RateLimiter {
  private readonly families: Record<LimitFamily, Map<string, SlidingWindow>> = {
    embeddings: new Map(),
    chat: new Map(),
    video: new Map(),
    // Vendor callbacks, per job: not a client's quota, but shared across instances the same way.
    callback: new Map(),
  };
  private readonly now: () => number;
  // Safe to share: admitNow never yields, so two calls cannot interleave.
  private readonly tight = new TightestScope();
  private lastSweep = Number.NEGATIVE_INFINITY;

  constructor(opts: MemoryLimiterOptions = {}) {
    // Elapsed time, not the wall clock: a clock stepped back would otherwise hold every window full.
    this.now = opts.now ?? elapsedMs;
  }

  admit(family: LimitFamily, scopes: readonly LimitScope[], tokens: number): Promise<LimitDecision> {
    return Promise.resolve(this.admitNow(family, scopes, tokens));
  }

  adjustTokens(family: LimitFamily, scopes: readonly LimitScope[], delta: number, second?: number): Promise<void> {
    this.adjustNow(family, scopes, delta, second);
    return Promise.resolve();
  }

  release(family: LimitFamily, scopes: readonly LimitScope[], tokens: number, second?: number): Promise<Record<string, string>> {
    this.releaseNow(family, scopes, tokens, second);
    return Promise.resolve(this.headersNow(family, scopes));
  }

  releaseNow(family: LimitFamily, scopes: readonly LimitScope[], tokensIn: number, from?: number): void {
    const tokens = cleanTokens(tokensIn);
    const second = Math.floor(this.now() / 1000);
    const windows = this.families[family];
    for (const s of scopes) {
      const w = windows.get(s.id);
      if (!w || !isLimited(s)) continue;
      w.advance(second);
      w.release(tokens, from);
    }
  }

  close(): Promise<void> {
    for (const m of Object.values(this.families)) m.clear();
    return Promise.resolve();
  }

  /** The synchronous core of `admit`, for callers on a hot path that want to skip the promise. */
  admitNow(family: LimitFamily, scopes: readonly LimitScope[], tokensIn: number): LimitDecision {
    const tokens = cleanTokens(tokensIn);
    const nowMs = this.now();
    const second = Math.floor(nowMs / 1000);
    this.sweep(second);
    const windows = this.families[family];

    let limited = false;
    let worstWait = -1;
    let worstScope: LimitScope | undefined;
    let worstDim: Dimension = 'requests';
    let worstUsed = 0;
    let worstAsked = 0;
    for (const s of scopes) {
      if (!isLimited(s)) continue;
      limited = true;
      const w = this.window(windows, s.id, second);
      const rpm = s.quota.rpm ?? 0;
      const tpm = s.quota.tpm ?? 0;
      if (rpm > 0 && w.usedRequests + 1 > rpm) {
        const wait = w.waitFor('requests', w.usedRequests + 1 - rpm, nowMs);
        if (wait > worstWait) {
          worstWait = wait;
          worstScope = s;
          worstDim = 'requests';
          worstUsed = w.usedRequests;
          worstAsked = 1;
        }
      }
      // A zero-token request still needs one free token: an exhausted window admits nothing.
      const need = tokens > 0 ? tokens : 1;
      if (tpm > 0 && tpm >= tokens && w.usedTokens + need > tpm) {
        const wait = w.waitFor('tokens', w.usedTokens + need - tpm, nowMs);
        if (wait > worstWait) {
          worstWait = wait;
          worstScope = s;
          worstDim = 'tokens';
          worstUsed = w.usedTokens;
          worstAsked = tokens;
        }
      }
    }
    if (!limited) return admittedUnlimited();

    const tooLarge = findTooLarge(scopes, tokens);
    if (tooLarge) return tooLargeDecision(family, tooLarge, tokens, this.headers(windows, scopes, nowMs));
    if (worstScope) {
      return refusedDecision(family, worstScope, worstDim, worstUsed, worstAsked, worstWait, this.headers(windows, scopes, nowMs));
    }

    for (const s of scopes) if (isLimited(s)) windows.get(s.id)!.consume(tokens);
    return { allowed: true, retryAfterSeconds: 0, headers: this.headers(windows, scopes, nowMs), second: Math.floor(nowMs / 1000) };
  }

  adjustNow(family: LimitFamily, scopes: readonly LimitScope[], delta: number, from?: number): void {
    if (!Number.isFinite(delta) || delta === 0) return;
    const rounded = delta > 0 ? Math.ceil(delta) : -Math.ceil(-delta);
    const second = Math.floor(this.now() / 1000);
    const windows = this.families[family];
    for (const s of scopes) {
      if ((s.quota.tpm ?? 0) <= 0) continue;
      const existing = windows.get(s.id);
      if (!existing && rounded < 0) continue;
      const w = existing ?? this.window(windows, s.id, second);
      w.advance(second);
      w.adjust(rounded, from);
    }
  }

  /**
   * Raises a scope's window to what another source (the shared Redis window) reports it holds;
   * the difference lands in the current second. Never lowers it: keeping more is the safe side.
   */
  raiseTo(family: LimitFamily, id: string, usedRequests: number, usedTokens: number): void {
    const w = this.window(this.families[family], id, Math.floor(this.now() / 1000));
    const moreRequests = usedRequests - w.usedRequests;
    const moreTokens = usedTokens - w.usedTokens;
    if (moreRequests > 0) w.addRequests(moreRequests);
    if (moreTokens > 0) w.adjust(moreTokens);
  }

  /**
   * The x-ratelimit-* headers the windows of `scopes` give now (after a give-back, for the refused
   * request's answer). A scope without a window holds nothing.
   */
  headersNow(family: LimitFamily, scopes: readonly LimitScope[]): Record<string, string> {
    const nowMs = this.now();
    const second = Math.floor(nowMs / 1000);
    const windows = this.families[family];
    for (const s of scopes) windows.get(s.id)?.advance(second);
    return this.headers(windows, scopes, nowMs, true);
  }

  /** Every window holding something, with its buckets (SlidingWindow.buckets) as of now. */
  *snapshot(): Generator<{ family: LimitFamily; id: string; buckets: [number, number, number][] }> {
    const second = Math.floor(this.now() / 1000);
    for (const family of Object.keys(this.families) as LimitFamily[]) {
      for (const [id, w] of this.families[family]) {
        w.advance(second);
        const buckets = w.buckets();
        if (buckets.length > 0) yield { family, id, buckets };
      }
    }
  }

  /** Number of live windows across families (for tests of the idle sweep). */
  get windowCount(): number {
    let n = 0;
    for (const m of Object.values(this.families)) n += m.size;
    return n;
  }

  private window(windows: Map<string, SlidingWindow>, id: string, second: number): SlidingWindow {
    let w = windows.get(id);
    if (!w) {
      w = new SlidingWindow(second);
      windows.set(id, w);
    } else w.advance(second);
    return w;
  }

  /** `withEmpty`: a scope without a window is shown as holding nothing (else it is left out). */
  private headers(windows: Map<string, SlidingWindow>, scopes: readonly LimitScope[], nowMs: number, withEmpty = false): Record<string, string> {
    const t = this.tight.clear();
    for (const s of scopes) {
      const w = windows.get(s.id);
      if (!w && !withEmpty) continue;
      const rpm = s.quota.rpm ?? 0;
      const tpm = s.quota.tpm ?? 0;
      if (rpm > 0) t.offer('requests', rpm, w?.usedRequests ?? 0, w?.resetMs('requests', nowMs) ?? 0, s.configured?.rpm);
      if (tpm > 0) t.offer('tokens', tpm, w?.usedTokens ?? 0, w?.resetMs('tokens', nowMs) ?? 0, s.configured?.tpm);
    }
    return t.headers();
  }

  private sweep(second: number): void {
    if (second - this.lastSweep < WINDOW_SECONDS) return;
    this.lastSweep = second;
    for (const m of Object.values(this.families)) {
      for (const [id, w] of m) if (w.idleAt(second)) m.delete(id);
    }
  }
}
