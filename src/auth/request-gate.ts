import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors } from '../core/errors.js';
import { useConsoleSession } from '../console/cookie-auth.js';
import type { SessionStore } from '../console/sessions.js';
import type { VideoService } from '../video/service.js';
import type { KeyAction } from '../store/types.js';
import type { Authenticator } from './authenticator.js';
import { requireAction } from './authorize.js';
import './types.js';

export interface RequestGateDeps {
  sessions: SessionStore;
  authenticator: Authenticator;
  video: Pick<VideoService, 'accountForSignedLink'>;
}

/**
 * Who is calling, for every matched /v1 and /admin route, in one hook (which also marks their
 * answers `Cache-Control: no-store`): first a console session
 * (cookie) stands in for the bearer credential on both, then every /v1 route needs a bearer key
 * (or, where the route allows it, a signed link) with the action the route names in its config
 * (`keyAction`, which every /v1 route must name); /admin routes check their token in their own
 * plugin. A callback hook, not an async one: a key found in the authenticator's cache (nearly every
 * request) is accepted without a promise or a microtask hop, and the route's options are read once.
 */
export function installRequestGate(app: FastifyInstance, deps: RequestGateDeps): void {
  // Fail closed: a /v1 route that names no key action would be open to keys of every action.
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/v1/') && route.config?.keyAction === undefined)
      throw new Error(`${String(route.method)} ${route.url} names no keyAction in its config (auth/types.ts)`);
  });
  app.addHook('onRequest', (req, reply, done) => {
    const route = req.routeOptions;
    const url = route.url;
    if (url === undefined) return done();
    const v1 = url.startsWith('/v1/');
    if (!v1 && !url.startsWith('/admin/')) return done();
    // Answers here are one caller's and may hold secrets (a new key, a webhook secret, a signed
    // output_url): no cache, the browser's or a proxy's, may keep them. A console session's requests
    // carry a cookie, not an Authorization header, so a shared cache would not know to leave them
    // alone. The video bytes behind a signed link are the exception: the link is the capability.
    if (!route.config.signedLinks) reply.header('cache-control', 'no-store');
    const action = route.config.keyAction;
    let pending: Promise<void> | undefined;
    try {
      useConsoleSession(req, deps.sessions, !v1, route.config.signedLinks);
      if (v1) pending = authenticateV1(req, deps, route.config.signedLinks);
      if (v1 && !pending) checkAction(req, action);
    } catch (e) {
      return done(e as Error);
    }
    if (!pending) return done();
    pending.then(() => {
      try {
        checkAction(req, action);
      } catch (e) {
        return done(e as Error);
      }
      done();
    }, done);
  });
}

/**
 * The route's key action, decided here in onRequest, before the body is read: a key that may not
 * call the endpoint learns nothing of what its body got wrong, and no body is read only to be
 * refused. A request on a signed link has no key (its route allows that in place of one).
 */
function checkAction(req: FastifyRequest, action: KeyAction | 'any' | undefined): void {
  if (!req.auth || action === 'any') return;
  // Registration refuses a /v1 route without one (above); should one slip by, no key may call it.
  if (action === undefined) throw errors.permissionDenied('This endpoint names no key action, so no API key may use it.');
  requireAction(req.auth, action);
}

/** Sets `req.auth` (or `req.signedAccountId`); a promise only when the key must be looked up in the store. */
function authenticateV1(req: FastifyRequest, deps: RequestGateDeps, signedLinks: boolean | undefined): Promise<void> | undefined {
  const q = req.query as Record<string, unknown>;
  if (signedLinks && q.signature !== undefined && req.headers.authorization === undefined) {
    const id = (req.params as { id?: string }).id ?? '';
    const account = deps.video.accountForSignedLink(id, q.expires, q.signature);
    if (!account) throw errors.unauthenticated('The signed link is invalid or has expired.');
    req.signedAccountId = account;
    return undefined;
  }
  // Node keeps only the first of repeated Authorization headers; refuse the ambiguity outright.
  const raw = req.raw.rawHeaders;
  let seen = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 13 && raw[i]!.toLowerCase() === 'authorization') seen++;
  if (seen > 1) throw errors.unauthenticated('Send exactly one Authorization header.');
  const header = req.headers.authorization;
  const cached = deps.authenticator.authenticateCached(header);
  if (cached) {
    req.auth = cached;
    return undefined;
  }
  return deps.authenticator.authenticate(header).then((ctx) => {
    req.auth = ctx;
  });
}
