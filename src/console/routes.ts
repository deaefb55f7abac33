import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import { isWellFormedKey } from '../auth/keys.js';
import type { Clock } from '../core/clock.js';
import { errors, GatewayError } from '../core/errors.js';
import { isObject } from '../core/json.js';
import { loadWebBundle, SECURITY_HEADERS, shellHtml, type WebBundle } from './assets.js';
import { checkCsrf, sameSecret, sessionIdOf, setSessionCookie } from './cookie-auth.js';
import type { ConsoleSession, SessionStore } from './sessions.js';
import type { SignInLimiter } from './sign-in-limit.js';

export interface ConsoleDeps {
  sessions: SessionStore;
  limiter: SignInLimiter;
  authenticator: Authenticator;
  adminToken: string | undefined;
  clock: Clock;
  /** The built bundle; loaded from dist/web when not given. */
  bundle?: WebBundle;
}

const MAX_TOKEN = 512;

/**
 * The sign-in body is `{"token": "..."}` of at most MAX_TOKEN characters; anyone may send it, so a
 * larger body is refused with 413 before it is read rather than held under the server's 10 MiB limit.
 */
const SESSION_BODY_LIMIT = 4 * 1024;

function describeSession(s: ConsoleSession) {
  return { object: 'console_session', role: s.role, label: s.label, csrf_token: s.csrf, expires_at: new Date(s.expiresAt).toISOString() };
}

/**
 * The console: its page and hashed assets, and the session endpoints (sign in with the admin token
 * or an API key, who am I, sign out). Everything else the console shows comes from /v1 and /admin.
 */
export function registerConsoleRoutes(app: FastifyInstance, deps: ConsoleDeps): void {
  const bundle = deps.bundle ?? loadWebBundle();
  const shell = shellHtml(bundle);

  const page = async (_req: FastifyRequest, reply: FastifyReply) =>
    reply
      .code(bundle ? 200 : 503)
      .headers({ ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' })
      .send(shell);
  app.get('/console', page);

  app.get<{ Params: { file: string } }>('/console/assets/:file', async (req, reply) => {
    const asset = bundle?.assets.get(req.params.file);
    if (!asset) throw errors.notFound('No such console asset.', 'route_not_found');
    reply.headers({ ...SECURITY_HEADERS, 'content-type': asset.type, etag: asset.etag, 'cache-control': 'public, max-age=31536000, immutable' });
    if (req.headers['if-none-match'] === asset.etag) return reply.code(304).send();
    return reply.send(asset.body);
  });

  // Refused before the body is read and before anything is counted: what a foreign page can make a
  // browser send here needs no preflight (a text/plain, form or multipart body), and counting it would
  // let any site the operator visits lock the operator's address out of signing in.
  const onlyOwnPageJson = async (req: FastifyRequest) => {
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none')
      throw errors.permissionDenied("Sign in from the console's own page.");
    const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json') throw errors.invalidRequest('Send {"token": "..."} as application/json.', undefined, 'unsupported_media_type');
  };

  // A session's answers are one browser's (its CSRF token; who is signed in), and a sign-in's refusals
  // (401, 429) no less: no cache may keep any of them.
  const noStore = async (_req: FastifyRequest, reply: FastifyReply) => {
    reply.header('cache-control', 'no-store');
  };

  app.post('/console/session', { onRequest: [noStore, onlyOwnPageJson], bodyLimit: SESSION_BODY_LIMIT }, async (req, reply) => {
    // Counted before the key lookup is awaited, so attempts sent at once are counted at once.
    const attempt = deps.limiter.begin(req.ip);
    if (attempt.retryAfter > 0) throw errors.rateLimited('Too many failed sign-ins from this address; wait and try again.', attempt.retryAfter);
    const answer = await signIn(req, reply);
    attempt.succeeded();
    return answer;
  });

  async function signIn(req: FastifyRequest, reply: FastifyReply) {
    const body = req.body;
    if (!isObject(body)) throw errors.invalidRequest('Send {"token": "<admin token or API key>"}.', undefined, 'invalid_body');
    const extra = Object.keys(body).find((k) => k !== 'token');
    if (extra) throw errors.invalidRequest(`Unknown field '${extra.slice(0, 100)}'.`, extra.slice(0, 100), 'unknown_parameter');
    const token = body.token;
    if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN)
      throw errors.invalidRequest("'token' must be the admin token or an API key.", 'token', 'missing_required_parameter');

    let session: ConsoleSession;
    if (deps.adminToken && sameSecret(token, deps.adminToken)) {
      session = deps.sessions.create('operator', token, 'operator');
    } else if (isWellFormedKey(token)) {
      // The same checks as any request with the key: unknown, revoked and expired keys are refused.
      const ctx = await deps.authenticator.authenticate(`Bearer ${token}`).catch(() => undefined);
      if (!ctx) throw errors.unauthenticated('That is not the admin token or a valid API key.');
      session = deps.sessions.create('key', token, `${ctx.account.name} · ${ctx.key.name ?? ctx.key.prefix}`);
    } else {
      throw errors.unauthenticated('That is not the admin token or a valid API key.');
    }
    // A fresh id at every sign-in (no fixation); the old session, if any, ends.
    deps.sessions.delete(sessionIdOf(req));
    setSessionCookie(reply, req, session, deps.clock.now());
    return describeSession(session);
  }

  app.get('/console/session', { onRequest: noStore }, async (req, reply) => {
    const id = sessionIdOf(req);
    const s = deps.sessions.get(id);
    if (!s) throw errors.unauthenticated('No console session: sign in.');
    // A key holder's session is only as good as its key: once the key is revoked or has expired the
    // session ends here too, rather than answering as live (with its CSRF token) until it idles out.
    // Only the key's own refusal (401) ends it: a store outage is the store's error (503), and must not
    // sign every console user out.
    const keyRefused = (e: unknown) => {
      if (e instanceof GatewayError && e.status === 401) return undefined;
      throw e;
    };
    if (s.role === 'key' && !(await deps.authenticator.authenticate(`Bearer ${s.credential}`).catch(keyRefused))) {
      deps.sessions.delete(id);
      setSessionCookie(reply, req, undefined, deps.clock.now());
      throw errors.unauthenticated('The API key behind this session was revoked or has expired: sign in again.');
    }
    return describeSession(s);
  });

  app.delete('/console/session', { onRequest: noStore, bodyLimit: SESSION_BODY_LIMIT }, async (req, reply) => {
    const id = sessionIdOf(req);
    const s = deps.sessions.get(id);
    if (s) checkCsrf(req, s);
    deps.sessions.delete(id);
    setSessionCookie(reply, req, undefined, deps.clock.now());
    return { object: 'console_session', signed_out: true };
  });
}
