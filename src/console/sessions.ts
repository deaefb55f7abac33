import { randomBytes } from 'node:crypto';

/** Who a console session acts as: the operator (admin token) or one API key's holder. */
export type SessionRole = 'operator' | 'key';

export interface ConsoleSession {
  id: string;
  role: SessionRole;
  /**
   * The bearer credential the session stands for. Held only in this process's memory (never in the
   * cookie, the browser's storage or a log): each request through the session is authenticated with
   * it exactly as a script's request would be, so a revoked key or a changed admin token ends it.
   */
  credential: string;
  /** Double-submit token the console sends in x-csrf-token on every write. */
  csrf: string;
  createdAt: number;
  lastSeenAt: number;
  expiresAt: number;
  /** Display only: the account and key prefix for a key holder. */
  label: string;
}

export interface SessionLimits {
  /** Absolute lifetime from sign-in. */
  ttlMs: number;
  /** A session unused this long ends before its absolute lifetime. */
  idleMs: number;
  /**
   * Bound on live sessions (memory). Past it, the least recently used key holder's session is dropped;
   * an operator's session never is (there are at most `maxPerCredential` of those).
   */
  maxSessions: number;
  /** Live sessions one credential (the admin token, or one key) may hold; past it, its own least recently used one ends. Default 10. */
  maxPerCredential?: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = { ttlMs: 12 * 3_600_000, idleMs: 3_600_000, maxSessions: 10_000, maxPerCredential: 10 };

const token = () => randomBytes(32).toString('base64url');

/**
 * Server-side console sessions: the cookie holds only an opaque random id. Sessions live in this
 * process (a restart or another instance behind a load balancer means signing in again); that keeps
 * credentials out of the database and makes sign-out immediate.
 *
 * Successful sign-ins are not rate limited, so the bounds are what keep one credential from pushing
 * out another's sessions: each credential's own sessions are capped (a key signing in over and over
 * only replaces its own), and the global bound drops key holders' sessions, never the operator's.
 */
export class SessionStore {
  // Maps and Sets iterate in insertion order; re-inserting on use keeps the least recently used first.
  private readonly sessions = new Map<string, ConsoleSession>();
  /** Session ids by credential, least recently used first. */
  private readonly byCredential = new Map<string, Set<string>>();
  private readonly perCredential: number;

  constructor(
    private readonly now: () => number,
    private readonly limits: SessionLimits = DEFAULT_SESSION_LIMITS,
  ) {
    this.perCredential = Math.max(1, limits.maxPerCredential ?? 10);
  }

  create(role: SessionRole, credential: string, label: string): ConsoleSession {
    const at = this.now();
    const s: ConsoleSession = { id: token(), role, credential, csrf: token(), createdAt: at, lastSeenAt: at, expiresAt: at + this.limits.ttlMs, label };
    const own = this.byCredential.get(credential);
    // Least recently used first: the credential's ended sessions go, then its oldest while it has no room.
    if (own) for (const id of own) if (own.size >= this.perCredential || !this.live(this.sessions.get(id), at)) this.delete(id);
    while (this.sessions.size >= this.limits.maxSessions) {
      // Only operator sessions left: they stay (at most perCredential of them), so the bound is exceeded by that few.
      if (!this.dropOldestKeySession()) break;
    }
    this.sessions.set(s.id, s);
    let ids = this.byCredential.get(credential);
    if (!ids) this.byCredential.set(credential, (ids = new Set()));
    ids.add(s.id);
    return s;
  }

  /** The live session for an id, touched; undefined when unknown, expired or idle too long. */
  get(id: string | undefined): ConsoleSession | undefined {
    if (!id) return undefined;
    const s = this.sessions.get(id);
    if (!s) return undefined;
    const at = this.now();
    if (!this.live(s, at)) {
      this.delete(id);
      return undefined;
    }
    s.lastSeenAt = at;
    this.sessions.delete(id);
    this.sessions.set(id, s);
    const own = this.byCredential.get(s.credential);
    own?.delete(id);
    own?.add(id);
    return s;
  }

  delete(id: string | undefined): boolean {
    const s = id ? this.sessions.get(id) : undefined;
    if (!s) return false;
    this.sessions.delete(s.id);
    const own = this.byCredential.get(s.credential);
    own?.delete(s.id);
    if (own?.size === 0) this.byCredential.delete(s.credential);
    return true;
  }

  get size(): number {
    return this.sessions.size;
  }

  private live(s: ConsoleSession | undefined, at: number): boolean {
    return s !== undefined && at < s.expiresAt && at - s.lastSeenAt < this.limits.idleMs;
  }

  /** Drops the least recently used key holder's session; false when there is none. */
  private dropOldestKeySession(): boolean {
    // Operator sessions are few (one credential, capped), so skipping them here costs little.
    for (const s of this.sessions.values()) {
      if (s.role === 'key') return this.delete(s.id);
    }
    return false;
  }
}
