import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * Answers that hold secrets must not be kept by any cache: the new key, a webhook endpoint's signing
 * secret, a job with its signed output_url, the console's reads through a session (which carry a
 * cookie, not an Authorization header, so a shared cache has no reason of its own to leave them
 * alone). Every /v1 and /admin route's answer says `Cache-Control: no-store`, errors included; the
 * video bytes (/v1/videos/{id}/content, a signed link's route) are left to the cache.
 */
let sim: SimServer;
let gw: TestGateway;
const admin = () => ({ authorization: `Bearer ${gw.adminToken}` });

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 50 });
  gw = await startTestGateway({ ...upstreamsFor([{ module: sora, sim }]), webhooks: { allow_private_networks: true, interval_ms: 0 } });
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

async function consoleSession(token: string): Promise<{ cookie: string; csrf: string }> {
  const r = await call(gw, 'POST', '/console/session', { body: { token } });
  expect(r.status, r.text).toBe(200);
  return { cookie: (r.headers.get('set-cookie') ?? '').split(';')[0]!, csrf: r.json.csrf_token };
}

describe('Cache-Control on answers that hold secrets', () => {
  it('a created key and a new webhook secret, over the admin token and through the operator session', async () => {
    await gw.createAccount('cache-acme', { balance: 1 });
    const key = await call(gw, 'POST', '/admin/keys', { headers: admin(), body: { account: 'cache-acme' } });
    expect(key.status, key.text).toBe(201);
    expect(key.json.key).toMatch(/^sk-gw-/);
    expect(key.headers.get('cache-control')).toBe('no-store');

    const hook = await call(gw, 'POST', '/admin/webhooks', { headers: admin(), body: { account: 'cache-acme', url: 'http://127.0.0.1:9/hook' } });
    expect(hook.status, hook.text).toBe(201);
    expect(hook.json.secret).toMatch(/^whsec_/);
    expect(hook.headers.get('cache-control')).toBe('no-store');

    const s = await consoleSession(gw.adminToken);
    const viaSession = await call(gw, 'POST', '/admin/keys', { headers: { cookie: s.cookie, 'x-csrf-token': s.csrf }, body: { account: 'cache-acme' } });
    expect(viaSession.status, viaSession.text).toBe(201);
    expect(viaSession.headers.get('cache-control')).toBe('no-store');
    for (const path of ['/admin/accounts/cache-acme', '/admin/keys?account=cache-acme', '/admin/usage?format=csv', '/admin/accounts/nobody'])
      expect((await call(gw, 'GET', path, { headers: { cookie: s.cookie } })).headers.get('cache-control'), path).toBe('no-store');
  });

  it("a key holder's job (with its signed output_url), usage and errors; not the signed video bytes", async () => {
    const { key } = await gw.newKey(10);
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'a fox', seconds: 4 } });
    expect(created.status, created.text).toBe(200);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const done = await pollUntilDone(gw, key, created.json.id, 5_000);
    expect(done.output_url).toContain('signature=');

    const s = await consoleSession(key);
    for (const path of [`/v1/videos/${created.json.id}`, '/v1/videos', '/v1/usage', '/v1/videos/not-an-id'])
      expect((await call(gw, 'GET', path, { headers: { cookie: s.cookie } })).headers.get('cache-control'), path).toBe('no-store');
    expect((await call(gw, 'GET', '/v1/usage', { key: 'sk-gw-wrong' })).headers.get('cache-control')).toBe('no-store');

    const bytes = await fetch(done.output_url);
    expect(bytes.status).toBe(200);
    await bytes.arrayBuffer();
    expect(bytes.headers.get('cache-control')).toBeNull();
  });

  it('every console session answer, the refusals of a sign-in included (401, 429, 400, 403)', async () => {
    const fresh = await startTestGateway({});
    try {
      const signIn = (token: unknown, headers: Record<string, string> = {}) => call(fresh, 'POST', '/console/session', { body: { token }, headers });
      const noStore = (r: { status: number; headers: Headers }, want: number, what: string) => {
        expect(r.status, what).toBe(want);
        expect(r.headers.get('cache-control'), what).toBe('no-store');
      };
      noStore(await signIn('sk-gw-wrong'), 401, 'a wrong key');
      noStore(await signIn(42), 400, 'a token that is not a string');
      noStore(await signIn(fresh.adminToken, { 'sec-fetch-site': 'cross-site' }), 403, 'another site');
      noStore(await call(fresh, 'POST', '/console/session', { body: 'x', headers: { 'content-type': 'text/plain' } }), 400, 'not JSON');
      noStore(await call(fresh, 'GET', '/console/session'), 401, 'no session');
      noStore(await call(fresh, 'DELETE', '/console/session'), 200, 'sign out');
      // Two attempts counted so far (the wrong key and the bad token); eight more fill the window.
      for (let i = 0; i < 8; i++) expect((await signIn('sk-gw-wrong')).status).toBe(401);
      const locked = await signIn(fresh.adminToken);
      noStore(locked, 429, 'locked out');
      expect(Number(locked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      noStore(await signIn(fresh.adminToken.replace(/.$/, '_')), 429, 'locked out, another wrong token');
    } finally {
      await fresh.close();
    }
  });
});
