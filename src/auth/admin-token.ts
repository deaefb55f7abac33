import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { authorizedBySession } from '../console/cookie-auth.js';
import { SignInLimiter } from '../console/sign-in-limit.js';
import { errors } from '../core/errors.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * A guard that lets only `Authorization: Bearer <admin token>` through (constant-time compare of
 * digests); with no admin token configured it lets nobody through.
 *
 * Wrong credentials are counted per client address in `limiter` (its own by default), as the console
 * sign-in counts guesses at the same token: past the limit the address gets 429 with Retry-After, even
 * with the right token (or the difference would tell a guesser it was right), until the window ends.
 * A request with no Authorization header at all is no guess and is not counted, nor is one whose
 * header a console session supplied (the operator's session keeps working through a lockout).
 */
export function adminTokenGuard(adminToken: string | undefined, limiter: SignInLimiter = new SignInLimiter(Date.now)): (req: FastifyRequest) => void {
  const want = adminToken ? digest(adminToken) : undefined;
  return (req) => {
    const h = req.headers.authorization;
    // Nothing to guess without a header or without an admin token.
    if (h === undefined || !want) throw errors.unauthenticated('This endpoint needs the admin token.');
    // Counted up front like a console sign-in (one look at the address), given back when right.
    const attempt = authorizedBySession(req) ? undefined : limiter.begin(req.ip);
    if (attempt && attempt.retryAfter > 0) throw errors.rateLimited('Too many wrong admin tokens from this address; wait and try again.', attempt.retryAfter);
    const m = typeof h === 'string' ? /^Bearer ([\x21-\x7e]+)$/.exec(h) : null;
    if (!m || !timingSafeEqual(digest(m[1]!), want)) throw errors.unauthenticated('This endpoint needs the admin token.');
    attempt?.succeeded();
  };
}
