import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../src/core/errors.js';
import { hashKey } from '../../src/auth/keys.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * The console's server side over real HTTP: sign-in, the cookie, CSRF on writes, the session
 * reaching only its own API, sign-out, revocation, rate-limited sign-in, and no token in the logs.
 */
let gw: TestGateway;
const logLines: string[] = [];

beforeAll(async () => {
  gw = await startTestGateway({ log_level: 'debug' }, { logSink: { write: (line: string) => void logLines.push(line) } });
});
afterAll(async () => gw?.close());

interface SignedIn {
  cookie: string;
  csrf: string;
  setCookie: string;
  json: any;
}

async function signIn(token: string, headers: Record<string, string> = {}): Promise<SignedIn> {
  const r = await call(gw, 'POST', '/console/session', { body: { token }, headers });
  expect(r.status, r.text).toBe(200);
  const setCookie = r.headers.get('set-cookie') ?? '';
  return { cookie: setCookie.split(';')[0]!, csrf: r.json.csrf_token, setCookie, json: r.json };
}

describe('POST /console/session', () => {
  it('signs the admin token in as operator with an HttpOnly, SameSite=Strict cookie (not Secure over plain HTTP)', async () => {
    const s = await signIn(gw.adminToken, { 'x-forwarded-for': '10.0.0.1' });
    expect(s.json).toMatchObject({ object: 'console_session', role: 'operator' });
    expect(s.setCookie).toMatch(/^gw_console=[A-Za-z0-9_-]{43}; Max-Age=\d+; Path=\/; HttpOnly; SameSite=Strict$/);
    // The cookie is an opaque id: neither the token nor anything derived from it.
    expect(s.setCookie).not.toContain(gw.adminToken);
    const who = await call(gw, 'GET', '/console/session', { headers: { cookie: s.cookie } });
    expect(who.json).toMatchObject({ role: 'operator', csrf_token: s.csrf });
  });

  it('signs an API key in as its holder, labelled with its account', async () => {
    const { key, account } = await gw.newKey(5);
    const s = await signIn(key);
    expect(s.json.role).toBe('key');
    expect(s.json.label).toContain(account);
  });

  it('refuses a wrong token, a revoked key and a malformed body in the error shape, setting no cookie', async () => {
    for (const token of ['not-the-token', `sk-gw-${'A'.repeat(43)}`]) {
      const r = await call(gw, 'POST', '/console/session', { body: { token } });
      expect(r.status).toBe(401);
      expect(r.json.error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
      expect(r.headers.get('set-cookie')).toBeNull();
    }
    const { key } = await gw.newKey(5);
    const rec = await gw.services.store.findKeyByHash(hashKey(key));
    await gw.services.admin.revokeKey(rec!.id);
    expect((await call(gw, 'POST', '/console/session', { body: { token: key } })).status).toBe(401);
    const bad = await call(gw, 'POST', '/console/session', { body: { token: 'x', extra: 1 } });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({ code: 'unknown_parameter', param: 'extra' });
    expect((await call(gw, 'POST', '/console/session', { body: [] })).json.error.code).toBe('invalid_body');
    expect((await call(gw, 'POST', '/console/session', { body: { token: 'x'.repeat(600) } })).status).toBe(400);
  });

  it('marks the cookie Secure when the request came over HTTPS through a trusted proxy', async () => {
    const proxied = await startTestGateway({ server: { trust_proxy: 1 } });
    try {
      const r = await call(proxied, 'POST', '/console/session', { body: { token: proxied.adminToken }, headers: { 'x-forwarded-proto': 'https' } });
      expect(r.headers.get('set-cookie')).toMatch(/; Secure/);
      const plain = await call(proxied, 'POST', '/console/session', { body: { token: proxied.adminToken } });
      expect(plain.headers.get('set-cookie')).not.toMatch(/Secure/);
    } finally {
      await proxied.close();
    }
  });

  it('limits sign-in attempts per client address: 429 with Retry-After, other addresses unaffected', async () => {
    const limited = await startTestGateway({ server: { trust_proxy: 1 } });
    try {
      const from = (ip: string, token = 'wrong') => call(limited, 'POST', '/console/session', { body: { token }, headers: { 'x-forwarded-for': ip } });
      for (let i = 0; i < 10; i++) expect((await from('203.0.113.7')).status).toBe(401);
      const r = await from('203.0.113.7', limited.adminToken);
      expect(r.status).toBe(429);
      expect(r.json.error.type).toBe('rate_limit_error');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await from('203.0.113.8', limited.adminToken)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe('the session cookie on /v1 and /admin', () => {
  it('authenticates the operator on /admin, with writes only with the CSRF token', async () => {
    const s = await signIn(gw.adminToken);
    expect((await call(gw, 'GET', '/admin/accounts', { headers: { cookie: s.cookie } })).status).toBe(200);
    const body = { name: 'csrf-check' };
    const none = await call(gw, 'POST', '/admin/accounts', { body, headers: { cookie: s.cookie } });
    expect(none.status).toBe(403);
    expect(none.json.error).toMatchObject({ type: 'permission_denied', code: 'csrf_token_invalid' });
    const wrong = await call(gw, 'POST', '/admin/accounts', { body, headers: { cookie: s.cookie, 'x-csrf-token': `${s.csrf}x` } });
    expect(wrong.status).toBe(403);
    expect(await gw.services.store.getAccountByName('csrf-check')).toBeUndefined();
    const ok = await call(gw, 'POST', '/admin/accounts', { body, headers: { cookie: s.cookie, 'x-csrf-token': s.csrf } });
    expect(ok.status, ok.text).toBe(201);
    // An operator session is no API key.
    expect((await call(gw, 'GET', '/v1/models', { headers: { cookie: s.cookie } })).status).toBe(401);
  });

  it("authenticates a key holder on /v1 as that key, never on /admin, never another account's job", async () => {
    const mine = await gw.newKey(5);
    const s = await signIn(mine.key);
    const usage = await call(gw, 'GET', '/v1/usage', { headers: { cookie: s.cookie } });
    expect(usage.status).toBe(200);
    expect(usage.json.data.key.prefix).toBe(mine.key.slice(0, 12));
    expect((await call(gw, 'GET', '/admin/accounts', { headers: { cookie: s.cookie } })).status).toBe(401);
    expect((await call(gw, 'GET', '/admin/accounts', { headers: { cookie: s.cookie, 'x-csrf-token': s.csrf } })).status).toBe(401);
    // A sealed id of another account is the same 404 as any unknown id.
    const otherId = gw.services.video.deps.sealer.seal({ a: 'another-account', j: 'some-job' } as never);
    expect((await call(gw, 'GET', `/v1/videos/${otherId}`, { headers: { cookie: s.cookie } })).status).toBe(404);
    // A signed link is judged on its own, cookie or not: a bad signature is 401, not the key's 404.
    const link = await call(gw, 'GET', `/v1/videos/${otherId}/content?expires=1&signature=bad`, { headers: { cookie: s.cookie } });
    expect(link.status).toBe(401);
  });

  it("leaves a request's own Authorization header alone (a script's key wins over a stale cookie)", async () => {
    const a = await gw.newKey(5);
    const b = await gw.newKey(5);
    const s = await signIn(a.key);
    const r = await call(gw, 'GET', '/v1/usage', { key: b.key, headers: { cookie: s.cookie } });
    expect(r.json.data.key.prefix).toBe(b.key.slice(0, 12));
  });

  it('stops working at sign-out (CSRF token required while live) and when the key is revoked', async () => {
    const { key } = await gw.newKey(5);
    const s = await signIn(key);
    expect((await call(gw, 'DELETE', '/console/session', { headers: { cookie: s.cookie } })).status).toBe(403);
    const out = await call(gw, 'DELETE', '/console/session', { headers: { cookie: s.cookie, 'x-csrf-token': s.csrf } });
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toMatch(/^gw_console=; Max-Age=0/);
    expect((await call(gw, 'GET', '/v1/usage', { headers: { cookie: s.cookie } })).status).toBe(401);
    expect((await call(gw, 'GET', '/console/session', { headers: { cookie: s.cookie } })).status).toBe(401);

    const other = await gw.newKey(5);
    const s2 = await signIn(other.key);
    const rec = (await gw.services.store.findKeyByHash(hashKey(other.key)))!;
    await gw.services.admin.revokeKey(rec.id);
    gw.services.authenticator.invalidate();
    expect((await call(gw, 'GET', '/v1/usage', { headers: { cookie: s2.cookie } })).status).toBe(401);
    // The session itself has ended: it no longer answers as live, with its CSRF token, and its cookie is cleared.
    const who = await call(gw, 'GET', '/console/session', { headers: { cookie: s2.cookie } });
    expect(who.status).toBe(401);
    expect(who.json.error).toMatchObject({ type: 'authentication_error' });
    expect(who.text).not.toContain(s2.csrf);
    expect(who.headers.get('set-cookie')).toMatch(/^gw_console=; Max-Age=0/);
  });

  it('outlives a store outage: the session check answers 503 and keeps the session', async () => {
    const { key } = await gw.newKey(5);
    const s = await signIn(key);
    const auth = gw.services.authenticator;
    const real = auth.authenticate;
    auth.authenticate = async () => {
      throw new StoreUnavailableError('the database is away');
    };
    try {
      const during = await call(gw, 'GET', '/console/session', { headers: { cookie: s.cookie } });
      expect(during.status).toBe(503);
      expect(during.headers.get('set-cookie')).toBeNull();
    } finally {
      auth.authenticate = real;
    }
    const after = await call(gw, 'GET', '/console/session', { headers: { cookie: s.cookie } });
    expect(after.status).toBe(200);
    expect(after.json.csrf_token).toBe(s.csrf);
  });

  it('a garbage or oversized cookie is no session', async () => {
    for (const cookie of ['gw_console=%%%', 'gw_console=short', `gw_console=${'a'.repeat(9000)}`, 'other=1'])
      expect((await call(gw, 'GET', '/console/session', { headers: { cookie } })).status).toBe(401);
  });

  it('never writes a token or session id to the log', async () => {
    const { key } = await gw.newKey(5);
    const s = await signIn(key);
    await call(gw, 'GET', '/v1/usage', { headers: { cookie: s.cookie } });
    const all = logLines.join('\n');
    expect(all).toContain('request completed');
    expect(all).not.toContain(key);
    expect(all).not.toContain(gw.adminToken);
    expect(all).not.toContain(s.cookie.split('=')[1]!);
    expect(all).not.toContain(s.csrf);
  });
});

describe('the console page and assets', () => {
  it('serves the shell with a strict policy and no caching, and hashed assets cached for a year', async () => {
    const page = await fetch(`${gw.url}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const html = await page.text();
    expect(html).not.toMatch(/<script>|<script [^>]*>[^<]/);
    expect(html).not.toMatch(/ on[a-z]+=|style=/);
    const js = /src="(\/console\/assets\/app-[A-Z0-9]+\.js)"/.exec(html)![1]!;
    const asset = await fetch(`${gw.url}${js}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const again = await fetch(`${gw.url}${js}`, { headers: { 'if-none-match': asset.headers.get('etag')! } });
    expect(again.status).toBe(304);
    for (const bad of ['nope.js', '..%2Fmanifest.json', 'manifest.json'])
      expect((await fetch(`${gw.url}/console/assets/${bad}`)).status).toBe(404);
  });
});
