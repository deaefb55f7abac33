import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { Authenticator } from '../../src/auth/authenticator.js';
import { installRequestGate } from '../../src/auth/request-gate.js';
import type { AuthContext } from '../../src/auth/types.js';
import { SessionStore } from '../../src/console/sessions.js';

/**
 * The request gate decides a /v1 route's key action from the route's own config. A route that names
 * none must not be open to every key: it is refused where it is registered, so the gateway does not
 * start with it.
 */
function gatedApp() {
  const app = Fastify();
  const ctx = { account: { id: 'acct' }, key: { id: 'key', actions: [] } } as unknown as AuthContext;
  const authenticator = { authenticateCached: () => ctx, authenticate: async () => ctx } as unknown as Authenticator;
  installRequestGate(app, { sessions: new SessionStore(() => 0), authenticator, video: { accountForSignedLink: () => undefined } });
  return app;
}

describe('a /v1 route without a key action', () => {
  it('is refused when it is registered, not served to keys of any action', async () => {
    const app = gatedApp();
    let served = false;
    await expect(
      (async () => {
        app.get('/v1/forgotten', async () => ((served = true), { ok: true }));
        await app.ready();
        const res = await app.inject({ method: 'GET', url: '/v1/forgotten', headers: { authorization: 'Bearer x' } });
        return res.statusCode;
      })(),
    ).rejects.toThrow(/keyAction/);
    expect(served).toBe(false);
    await app.close();
  });

  it('is refused in a plugin of its own too (as the routes are registered)', async () => {
    const app = gatedApp();
    app.register(async (scope) => {
      scope.register(async (inner) => {
        inner.post('/v1/nested', async () => ({ ok: true }));
      });
    });
    await expect(app.ready()).rejects.toThrow(/POST \/v1\/nested names no keyAction/);
    await app.close().catch(() => undefined);
  });

  it('one that says any key may call it (its own usage) is served to a key without actions', async () => {
    const app = gatedApp();
    app.get('/v1/mine', { config: { keyAction: 'any' } }, async () => ({ ok: true }));
    app.get('/v1/videos-only', { config: { keyAction: 'video' } }, async () => ({ ok: true }));
    await app.ready();
    const get = (url: string, method: 'GET' | 'HEAD' = 'GET') => app.inject({ method, url, headers: { authorization: 'Bearer x' } });
    expect((await get('/v1/mine')).statusCode).toBe(200);
    expect((await get('/v1/videos-only')).statusCode).toBe(403);
    // The HEAD route Fastify adds for a GET carries the same action.
    expect((await get('/v1/videos-only', 'HEAD')).statusCode).toBe(403);
    await app.close();
  });
});
