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
  /** Bound on live sessions (memory); the least recently used is dropped past it. */
  maxSessions: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = { ttlMs: 12 * 3_600_000, idleMs: 3_600_000, maxSessions: 10_000 };

const token = () => randomBytes(32).toString('base64url');

/**
 * Server-side console sessions: the cookie holds only an opaque random id. Sessions live in this
 * process (a restart or another instance behind a load balancer means signing in again); that keeps
 * credentials out of the database and makes sign-out immediate.
 */
export class SessionStore {
  // A Map iterates in insertion order; re-inserting on use keeps the least recently used first.
  private readonly sessions = new Map<string, ConsoleSession>();

  constructor(
    private readonly now: () => number,
    private readonly limits: SessionLimits = DEFAULT_SESSION_LIMITS,
  ) {}

  create(role: SessionRole, credential: string, label: string): ConsoleSession {
    const at = this.now();
    const s: ConsoleSession = { id: token(), role, credential, csrf: token(), createdAt: at, lastSeenAt: at, expiresAt: at + this.limits.ttlMs, label };
    while (this.sessions.size >= this.limits.maxSessions) {
      const oldest = this.sessions.keys().next().value;
      if (oldest === undefined) break;
      this.sessions.delete(oldest);
    }
    this.sessions.set(s.id, s);
    return s;
  }

  /** The live session for an id, touched; undefined when unknown, expired or idle too long. */
  get(id: string | undefined): ConsoleSession | undefined {
    if (!id) return undefined;
    const s = this.sessions.get(id);
    if (!s) return undefined;
    const at = this.now();
    if (at >= s.expiresAt || at - s.lastSeenAt >= this.limits.idleMs) {
      this.sessions.delete(id);
      return undefined;
    }
    s.lastSeenAt = at;
    this.sessions.delete(id);
    this.sessions.set(id, s);
    return s;
  }

  delete(id: string | undefined): boolean {
    return id ? this.sessions.delete(id) : false;
  }

  get size(): number {
    return this.sessions.size;
  }
}
