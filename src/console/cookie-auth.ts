import { createHash, timingSafeEqual } from 'node:crypto';
import { parse as parseCookie, serialize as serializeCookie } from 'cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../core/errors.js';
import type { ConsoleSession, SessionStore } from './sessions.js';

export const SESSION_COOKIE = 'gw_console';
export const CSRF_HEADER = 'x-csrf-token';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const digest = (s: string) => createHash('sha256').update(s).digest();
/** Constant-time string comparison (over digests, so lengths leak nothing either). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

/** The session id from the request's Cookie header (one header; a malformed one counts as none). */
export function sessionIdOf(req: FastifyRequest): string | undefined {
  const header = req.headers.cookie;
  if (typeof header !== 'string' || header.length > 8192) return undefined;
  try {
    const value = parseCookie(header)[SESSION_COOKIE];
    return value && /^[A-Za-z0-9_-]{20,100}$/.test(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** HttpOnly, SameSite=Strict, Path=/ (the session authenticates /v1 and /admin); Secure over HTTPS. */
export function setSessionCookie(reply: FastifyReply, req: FastifyRequest, s: ConsoleSession | undefined, now: number): void {
  const secure = req.protocol === 'https';
  const value = s ? s.id : '';
  const maxAge = s ? Math.max(0, Math.floor((s.expiresAt - now) / 1000)) : 0;
  reply.header('set-cookie', serializeCookie(SESSION_COOKIE, value, { httpOnly: true, sameSite: 'strict', secure, path: '/', maxAge }));
}

/** Writes through a cookie session must carry the session's CSRF token in x-csrf-token. */
export function checkCsrf(req: FastifyRequest, s: ConsoleSession): void {
  if (SAFE_METHODS.has(req.method)) return;
  const sent = req.headers[CSRF_HEADER];
  if (typeof sent !== 'string' || !sameSecret(sent, s.csrf)) throw errors.csrfRejected();
}

/**
 * Lets a console session authenticate the same /v1 and /admin routes a script calls: a request
 * with no Authorization header but a live session cookie is handled as if it carried the session's
 * bearer credential (the operator's admin token on /admin, the key holder's key on /v1), so every
 * check those routes make (revocation, scopes, account isolation) applies unchanged. A request that
 * brings its own Authorization header is never touched. Called by the request gate
 * (auth/request-gate.ts) for matched /v1 and /admin routes, before the bearer check; throws 403 for
 * a write without the session's CSRF token.
 */
export function useConsoleSession(req: FastifyRequest, sessions: SessionStore, admin: boolean, signedLinks: boolean | undefined): void {
  if (req.headers.authorization !== undefined) return;
  // A signed link stands on its own (it may be another account's shared output_url).
  if (signedLinks && (req.query as Record<string, unknown>).signature !== undefined) return;
  // Most requests carry no cookie at all: nothing to parse or look up.
  if (req.headers.cookie === undefined) return;
  const s = sessions.get(sessionIdOf(req));
  if (!s) return;
  // Each role reaches only its own API: an operator session is no key, a key holder no operator.
  if ((s.role === 'operator') !== admin) return;
  checkCsrf(req, s);
  req.headers.authorization = `Bearer ${s.credential}`;
  viaSession.add(req);
}

/** Requests whose Authorization header was supplied by a console session (see useConsoleSession). */
const viaSession = new WeakSet<FastifyRequest>();

/**
 * Whether the request's credential came from a console session rather than from the client: such a
 * request is no guess at a token (the session id is 32 random bytes, handed out only after a sign-in
 * that the sign-in limit allowed), so credential limits need not hold it back.
 */
export function authorizedBySession(req: FastifyRequest): boolean {
  return viaSession.has(req);
}
