import { elapsedMs } from '../core/clock.js';
import { cleanTokens, findTooLarge, isLimited, type LimitDecision } from './decision.js';
import { MemoryRateLimiter } from './memory.js';
import type { LimitFamily, LimitScope } from './types.js';
import { WINDOW_SECONDS } from './window.js';

/**
 * Per second: requests and tokens admitted (positive) or given back (negative) locally that the
 * shared windows have not seen. A give-back is kept under its admission's second, where it is taken
 * from (as a correction sent to Redis would be); one whose admission's second is unknown under
 * `looseSecond(the second it was made)`, taken from the newest buckets up to then.
 */
type Unshared = Map<number, { r: number; t: number }>;

/** The key of a give-back made in `second` whose admission's second is unknown (RECORD_LUA reads it so). */
const looseSecond = (second: number): number => -1 - second;
/** The second an Unshared key is about: when it was admitted or given back. */
const secondOf = (key: number): number => (key < 0 ? -1 - key : key);

/** What the shared windows are told when Redis answers again: per scope key, [second, requests, tokens] (RECORD_LUA). */
export interface UnsharedUsage {
  key: string;
  buckets: [number, number, number][];
  /** The taken-over turns that touched this scope: [turn key, the scope's place in the turn's record]. */
  turns: [string, number][];
}

/**
 * Most taken-over turns remembered. A call fails once per outage or cool-down (a hung Redis has its
 * connection dropped, and none is sent until a new one is ready), so this is never reached in
 * practice; it only keeps a pathological flapping from growing memory without end.
 */
const MAX_TURNS = 1_000;

/**
 * The local limits used while Redis is unreachable, built so that the combined rate of every
 * instance stays near the configured limit instead of multiplying by the number of instances:
 *
 * - it starts from what Redis last said: each shared answer is mirrored into the local window
 *   of that scope, so an outage continues the current minute instead of starting from zero;
 * - each instance takes its share: the quota divided by the number of live instances Redis last
 *   reported (at least one request);
 * - what it admits alone, and the corrections and give-backs it makes, are remembered and handed
 *   to Redis when it answers again (before Redis decides another of this instance's admissions,
 *   and at its first heartbeat after the outage), so the minute after the outage counts them too;
 * - so are the turns (script calls, redis-batch.ts) whose operations it took over when their call
 *   failed: Redis may have run them all the same (a timed-out command whose bytes were sent), and
 *   the hand-over then undoes what they changed there, so that each operation counts once
 *   (RECORD_LUA).
 */
export class LocalFallback {
  readonly windows: MemoryRateLimiter;
  /** Live instances sharing the quotas, as Redis last reported them (1 until it has). */
  instances = 1;
  private readonly unshared = new Map<string, Unshared>();
  /** Taken-over turns, oldest first: each turn's key and its scope keys in the order of its call. */
  private turns: { key: string; scopes: readonly string[] }[] = [];
  private readonly now: () => number;
  private lastPrune = 0;

  constructor(now?: () => number) {
    this.now = now ?? elapsedMs;
    this.windows = new MemoryRateLimiter({ now: this.now });
  }

  /** Mirrors what Redis reported a scope's shared window holds (its `used` after this admission). */
  learn(family: LimitFamily, scope: LimitScope, usedRequests: number, usedTokens: number): void {
    this.windows.raiseTo(family, scope.id, usedRequests, usedTokens);
  }

  admit(family: LimitFamily, scopes: readonly LimitScope[], tokensIn: number, keyOf: (s: LimitScope) => string): LimitDecision {
    const tokens = cleanTokens(tokensIn);
    // Too large for the real quota: refused on it (with its headers), never admitted on a share.
    if (findTooLarge(scopes, tokens)) return this.windows.admitNow(family, scopes, tokens);
    const shares = scopes.map((s) => this.share(s, tokens));
    const decision = this.windows.admitNow(family, shares, tokens);
    if (decision.allowed) for (const s of scopes) if (isLimited(s)) this.note(keyOf(s), 1, tokens);
    return decision;
  }

  adjust(family: LimitFamily, scopes: readonly LimitScope[], delta: number, keyOf: (s: LimitScope) => string, from?: number): void {
    this.windows.adjustNow(family, scopes, delta, from);
    // More tokens land in the current second; fewer come out of the admission's (redis-scripts.ts).
    const at = delta > 0 ? undefined : this.givenBackAt(from);
    for (const s of scopes) this.note(keyOf(s), 0, delta, at);
  }

  /** Gives an admission back; returns the headers after it, on this instance's shares as an admission here shows them. */
  release(family: LimitFamily, scopes: readonly LimitScope[], tokensIn: number, keyOf: (s: LimitScope) => string, from?: number): Record<string, string> {
    const tokens = cleanTokens(tokensIn);
    this.windows.releaseNow(family, scopes, tokens, from);
    const at = this.givenBackAt(from);
    for (const s of scopes) if (isLimited(s)) this.note(keyOf(s), -1, -tokens, at);
    return this.windows.headersNow(family, scopes.map((s) => this.share(s, tokens)));
  }

  /**
   * A turn whose call failed and whose operations are being decided here instead (admitted and
   * noted like any other): remembered until the hand-over, which finds out whether Redis ran it.
   * Every scope it touched gets a record then, even one with nothing admitted here since.
   */
  tookOver(turnKey: string, scopeKeys: readonly string[]): void {
    this.turns.push({ key: turnKey, scopes: scopeKeys });
    if (this.turns.length > MAX_TURNS) this.turns.shift();
  }

  /** Takes what was admitted locally and is still inside the window, and the taken-over turns, for Redis to count. */
  takeUnshared(): UnsharedUsage[] {
    const oldest = Math.floor(this.now() / 1000) - WINDOW_SECONDS + 1;
    const byKey = new Map<string, UnsharedUsage>();
    const usage = (key: string) => {
      let u = byKey.get(key);
      if (!u) byKey.set(key, (u = { key, buckets: [], turns: [] }));
      return u;
    };
    for (const [key, seconds] of this.unshared) {
      const buckets: [number, number, number][] = [];
      // Signed: a give-back counts as surely as an admission. Left out, one that a taken-over turn
      // made in Redis too would be undone there and never redone.
      for (const [sec, u] of seconds) if (secondOf(sec) >= oldest && (u.r !== 0 || u.t !== 0)) buckets.push([sec, u.r, u.t]);
      if (buckets.length > 0) usage(key).buckets = buckets;
    }
    // Kept whatever their age: Redis may have run a turn long after it was sent (a Redis that
    // resumes after a long hang), and its changes are then still inside the window.
    for (const turn of this.turns) turn.scopes.forEach((key, place) => usage(key).turns.push([turn.key, place]));
    this.unshared.clear();
    this.turns = [];
    return [...byKey.values()];
  }

  get hasUnshared(): boolean {
    return this.unshared.size > 0 || this.turns.length > 0;
  }

  close(): Promise<void> {
    this.unshared.clear();
    this.turns = [];
    return this.windows.close();
  }

  /**
   * This instance's share of a scope's quota. A request that fits the whole quota is never called
   * too large here (that verdict belongs to the real quota), so the token share is at least its size.
   * Answers name the configured quota (headers: limit as configured, remaining on the share).
   */
  private share(s: LimitScope, tokens: number): LimitScope {
    const n = Math.max(1, this.instances);
    if (n === 1) return s;
    const rpm = s.quota.rpm ?? 0;
    const tpm = s.quota.tpm ?? 0;
    return {
      id: s.id,
      configured: s.quota,
      quota: {
        rpm: rpm > 0 ? Math.max(1, Math.floor(rpm / n)) : 0,
        tpm: tpm > 0 ? Math.max(tokens, Math.floor(tpm / n), 1) : 0,
      },
    };
  }

  /** Where a give-back is kept (see Unshared): its admission's second, or the loose key of now. */
  private givenBackAt(from: number | undefined): number {
    return from !== undefined && from >= 0 ? from : looseSecond(Math.floor(this.now() / 1000));
  }

  /** Counts an operation under `at` (see Unshared; by default the current second). */
  private note(key: string, requests: number, tokens: number, at?: number): void {
    if (requests === 0 && tokens === 0) return;
    const sec = Math.floor(this.now() / 1000);
    const where = at ?? sec;
    // A give-back of an admission that left the window takes nothing, here as in Redis.
    if (secondOf(where) <= sec - WINDOW_SECONDS) return;
    this.prune(sec);
    let seconds = this.unshared.get(key);
    if (!seconds) {
      seconds = new Map();
      this.unshared.set(key, seconds);
    }
    const u = seconds.get(where) ?? { r: 0, t: 0 };
    u.r += requests;
    u.t += tokens;
    seconds.set(where, u);
    // Bounded: seconds that left the window are dropped as new ones arrive.
    if (seconds.size > 2 * WINDOW_SECONDS) for (const old of seconds.keys()) if (secondOf(old) <= sec - WINDOW_SECONDS) seconds.delete(old);
  }

  /** At most once a window: forgets scopes with nothing left inside it (a long outage stays bounded). */
  private prune(sec: number): void {
    if (sec - this.lastPrune < WINDOW_SECONDS) return;
    this.lastPrune = sec;
    for (const [key, seconds] of this.unshared) {
      for (const old of seconds.keys()) if (secondOf(old) <= sec - WINDOW_SECONDS) seconds.delete(old);
      if (seconds.size === 0) this.unshared.delete(key);
    }
  }
}
