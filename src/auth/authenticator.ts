import { errors } from '../core/errors.js';
import type { Clock } from '../core/clock.js';
import { SharedFlights } from '../core/shared-flights.js';
import type { Store } from '../store/types.js';
import { hashKey, isWellFormedKey } from './keys.js';
import type { AuthContext } from './types.js';

interface CacheEntry {
  ctx: AuthContext | undefined;
  /** When the lookup that produced it started: a revoke committed after that is not in it. */
  at: number;
  refreshing?: boolean;
}

/**
 * How long a looked-up key (and its account) is trusted: a revoke, an expiry change or an account
 * change made on another instance takes effect here within this time.
 */
export const KEY_CACHE_TTL_MS = 1_000;

/**
 * Resolves `Authorization: Bearer <key>` to an account and key. Keys are looked up by their
 * SHA-256 (a hash index lookup, so no byte-by-byte comparison a timing attack could read) and the
 * answer, found or not, is cached for `ttlMs`: a revoked key stops working within that time, on
 * every instance. Past half that time the next request starts a lookup in the background and goes
 * on with the cached answer, so under steady traffic no request waits for the store; only a key
 * unused for a whole `ttlMs` is looked up inline.
 */
export class Authenticator {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly touched = new Map<string, number>();
  /** Bumped by `invalidate`, so a lookup that started before it cannot put its answer back. */
  private generation = 0;
  /** Inline lookups in flight by presented key (see `sharedLookup`). */
  private readonly inflight: SharedFlights<string, CacheEntry>;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly ttlMs = KEY_CACHE_TTL_MS,
    private readonly maxEntries = 100_000,
  ) {
    this.inflight = new SharedFlights(ttlMs);
  }

  /** Throws 401 for a missing, malformed, unknown, revoked or expired key. */
  async authenticate(header: string | string[] | undefined): Promise<AuthContext> {
    const cached = this.authenticateCached(header);
    if (cached) return cached;
    const entry = await this.sharedLookup(parseBearer(header));
    return this.admit(entry, this.clock.now());
  }

  /**
   * The lookup for a key the cache cannot answer, shared by every request for that key that arrives
   * while it runs. After an idle spell the first requests of a burst all find the cache expired;
   * each looking the key up on its own sent a herd of queries to the store (two round trips each,
   * on a PostgreSQL pool that may be reconnecting) and the burst queued behind them. A request joins
   * a lookup only if it started within the cache's lifetime, so no answer older than that is served
   * even when the store is slow; `invalidate` drops it, so a request after a revoke never joins one
   * from before.
   */
  private sharedLookup(key: string): Promise<CacheEntry> {
    const now = this.clock.now();
    return this.inflight.join(key, now, () => this.lookup(key, now));
  }

  /**
   * `authenticate` without waiting, for the request hook: the answer when the cache holds one
   * young enough to use, undefined when the store must be asked first (then call `authenticate`).
   * Throws the same 401s. Saves the promise and the microtask hop of every cached request.
   */
  authenticateCached(header: string | string[] | undefined): AuthContext | undefined {
    const key = parseBearer(header);
    const now = this.clock.now();
    // Keyed by the presented key itself, so a cache hit costs no hashing; the store is only ever
    // asked by hash.
    const entry = this.cache.get(key);
    if (!entry || now - entry.at > this.ttlMs) return undefined;
    this.refreshWhenHalfStale(key, entry, now);
    return this.admit(entry, now);
  }

  /** Past half the TTL the next request starts a lookup in the background and goes on with the cached answer. */
  private refreshWhenHalfStale(key: string, entry: CacheEntry, now: number): void {
    if (now - entry.at <= this.ttlMs / 2 || entry.refreshing) return;
    entry.refreshing = true;
    this.lookup(key, now).catch(() => (entry.refreshing = false));
  }

  private admit(entry: CacheEntry, now: number): AuthContext {
    const ctx = entry.ctx;
    if (!ctx) throw errors.unauthenticated();
    if (ctx.key.revokedAt !== null) throw errors.unauthenticated('This API key has been revoked.');
    if (ctx.key.expiresAt !== null && ctx.key.expiresAt <= now) throw errors.unauthenticated('This API key has expired.');
    this.touch(ctx.key.id, now);
    return ctx;
  }

  /** Drops cached answers (after a revoke or an account change on this instance). */
  invalidate(): void {
    this.generation++;
    this.cache.clear();
    this.inflight.clear();
  }

  private async lookup(key: string, startedAt: number): Promise<CacheEntry> {
    const generation = this.generation;
    const entry: CacheEntry = { ctx: await this.load(hashKey(key)), at: startedAt };
    if (generation !== this.generation) return entry;
    const current = this.cache.get(key);
    // A slower lookup that started earlier must not replace a fresher answer.
    if (current && current.at > startedAt) return current;
    if (this.cache.size >= this.maxEntries) this.cache.clear();
    this.cache.set(key, entry);
    return entry;
  }

  private async load(hash: string): Promise<AuthContext | undefined> {
    const key = await this.store.findKeyByHash(hash);
    if (!key) return undefined;
    const account = await this.store.getAccount(key.accountId);
    return account ? { account, key } : undefined;
  }

  /** last_used_at is written at most once a minute per key, off the request path. */
  private touch(keyId: string, now: number): void {
    const last = this.touched.get(keyId) ?? 0;
    if (now - last < 60_000) return;
    this.touched.set(keyId, now);
    this.store.touchKey(keyId, now).catch(() => undefined);
  }
}

/** Exactly one `Authorization` header, scheme Bearer, one printable-ASCII token of the right form. */
export function parseBearer(header: string | string[] | undefined): string {
  if (header === undefined || header === '') throw errors.unauthenticated('Missing API key: send Authorization: Bearer <key>.');
  if (Array.isArray(header)) throw errors.unauthenticated('Send exactly one Authorization header.');
  const m = /^Bearer ([\x21-\x7e]+)$/.exec(header);
  if (!m) throw errors.unauthenticated('Malformed Authorization header: expected "Bearer <key>".');
  const key = m[1]!;
  if (!isWellFormedKey(key)) throw errors.unauthenticated('Invalid API key.');
  return key;
}
