import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { Executor } from '../../../src/http/executor.js';
import { TransportError } from '../../../src/http/types.js';
import {
  CLOUD_PLATFORM_SCOPE,
  googleAuthOptionsFrom,
  googleCredentialSource,
  type ServiceAccountKey,
} from '../../../src/protocols/google/oauth.js';
import type { SimServer } from '../../../src/sim/framework.js';
import { startTokenServer, TokenIssuer, type TokenIssuer as Issuer } from '../../../src/sim/google-token.js';

let sim: SimServer;
let issuer: Issuer;
let tokenUri: string;
let key: ServiceAccountKey;
let clock = Date.now();
const now = () => clock;
const executor = new Executor();

beforeAll(async () => {
  ({ sim, issuer, tokenUri } = await startTokenServer({ now }));
  key = issuer.newServiceAccount(tokenUri, 'oauth-test');
});
afterEach(() => {
  sim.reset();
  clock = Date.now();
  issuer.ttlSeconds = 3599;
});
afterAll(async () => {
  await sim.close();
  await executor.close();
});

function decodeJwt(jwt: string) {
  const [h, c] = jwt.split('.');
  return { header: JSON.parse(Buffer.from(h!, 'base64url').toString()), claims: JSON.parse(Buffer.from(c!, 'base64url').toString()) };
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}

describe('googleAuthOptionsFrom', () => {
  it('reads access_token, an inline service_account (object or JSON text) and key_file', () => {
    expect(googleAuthOptionsFrom({ access_token: ' tok ' })).toEqual({ accessToken: 'tok' });
    expect(googleAuthOptionsFrom({ service_account: key as never }).serviceAccount?.client_email).toBe(key.client_email);
    expect(googleAuthOptionsFrom({ service_account: JSON.stringify(key) }).serviceAccount?.private_key).toBe(key.private_key);
    expect(googleAuthOptionsFrom({ key_file: '/etc/absent-sa.json', project: 'x' })).toEqual({
      keyFile: { path: '/etc/absent-sa.json', error: expect.stringMatching(/ENOENT/) },
    });
    expect(googleAuthOptionsFrom({ access_token: '', key_file: '' })).toEqual({});
  });

  it('rejects a malformed inline key without echoing it', () => {
    const e = (() => {
      try {
        googleAuthOptionsFrom({ service_account: { client_email: 'a@b', private_key: 'nope-secret' } });
      } catch (err) {
        return err as Error;
      }
      throw new Error('expected a throw');
    })();
    expect(e.message).toMatch(/private_key/);
    expect(e.message).not.toContain('nope-secret');
  });
});

describe('googleCredentialSource', () => {
  it('uses a static access token as it is', async () => {
    const src = googleCredentialSource({ accessToken: 'ya29.static' }, executor, now);
    expect(await src.headers()).toEqual({ authorization: 'Bearer ya29.static' });
    expect(sim.requests).toHaveLength(0);
  });

  it('needs some credential', () => {
    expect(() => googleCredentialSource({}, executor)).toThrow(/access_token, service_account or key_file/);
  });

  it('mints a token with a signed JWT-bearer assertion at the key\'s token_uri, then caches it', async () => {
    const src = googleCredentialSource({ serviceAccount: key }, executor, now);
    const h = await src.headers();
    expect(h['authorization']).toMatch(/^Bearer ya29\.sim-/);
    expect(issuer.isValid(h['authorization']!.slice(7))).toBe(true);
    expect(await src.headers()).toEqual(h);
    expect(issuer.issued).toBeGreaterThan(0);

    const calls = sim.received('POST', '/token');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    const form = new URLSearchParams(calls[0]!.raw.toString());
    expect(form.get('grant_type')).toBe('urn:ietf:params:oauth:grant-type:jwt-bearer');
    const { header, claims } = decodeJwt(form.get('assertion')!);
    expect(header).toEqual({ alg: 'RS256', typ: 'JWT', kid: key.private_key_id });
    expect(claims).toEqual({
      iss: key.client_email,
      scope: CLOUD_PLATFORM_SCOPE,
      aud: tokenUri,
      iat: Math.floor(clock / 1000),
      exp: Math.floor(clock / 1000) + 3600,
    });
  });

  it('concurrent callers share one in-flight exchange', async () => {
    const src = googleCredentialSource({ serviceAccount: key }, executor, now);
    sim.latencyMs = 50;
    const all = await Promise.all(Array.from({ length: 20 }, () => src.headers()));
    expect(new Set(all.map((h) => h['authorization'])).size).toBe(1);
    expect(sim.received('POST', '/token')).toHaveLength(1);
  });

  it('a call whose signal aborts stops waiting for a token; the exchange goes on for a call still waiting', async () => {
    const src = googleCredentialSource({ serviceAccount: key }, executor, now);
    let answer!: () => void;
    sim.inject({ kind: 'hold', until: new Promise<void>((r) => (answer = r)) }, 1, /\/token$/);
    const stop = new AbortController();
    const cancelled = src.headers(stop.signal);
    const patient = src.headers();
    for (let i = 0; i < 200 && sim.received('POST', '/token').length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    stop.abort();
    const e = await rejection(cancelled);
    expect(e).toBeInstanceOf(TransportError);
    expect((e as TransportError).reason).toBe('aborted');
    answer();
    expect((await patient)['authorization']).toMatch(/^Bearer ya29\.sim-/);
    expect(sim.received('POST', '/token')).toHaveLength(1);
  });

  it('an exchange every caller left is cut: the pool closes at once and the next call starts afresh', async () => {
    const own = new Executor();
    const src = googleCredentialSource({ serviceAccount: key }, own, now);
    let answer!: () => void;
    sim.inject({ kind: 'hold', until: new Promise<void>((r) => (answer = r)) }, 1, /\/token$/);
    const stops = [new AbortController(), new AbortController()];
    const waits = stops.map((c) => rejection(src.headers(c.signal)));
    for (let i = 0; i < 200 && sim.received('POST', '/token').length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    for (const c of stops) c.abort();
    for (const e of await Promise.all(waits)) expect((e as TransportError).reason).toBe('aborted');
    expect((await src.headers())['authorization']).toMatch(/^Bearer ya29\.sim-/);
    expect(sim.received('POST', '/token')).toHaveLength(2);
    // Closing waits for requests in flight: the cut exchange is not one of them.
    const started = Date.now();
    await own.close();
    expect(Date.now() - started).toBeLessThan(1_000);
    answer();
  });

  it('refreshes five minutes before expiry, not earlier', async () => {
    const src = googleCredentialSource({ serviceAccount: key }, executor, now);
    const first = await src.headers();
    clock += 54 * 60_000;
    expect(await src.headers()).toEqual(first);
    clock += 2 * 60_000; // 56 minutes in: within the last five minutes of a 3599 s token
    const second = await src.headers();
    expect(second).not.toEqual(first);
    expect(sim.received('POST', '/token')).toHaveLength(2);
  });

  it('short-lived tokens are refreshed at half their life', async () => {
    issuer.ttlSeconds = 60;
    const src = googleCredentialSource({ serviceAccount: key }, executor, now);
    const first = await src.headers();
    clock += 29_000;
    expect(await src.headers()).toEqual(first);
    clock += 2_000;
    expect(await src.headers()).not.toEqual(first);
  });

  it('a refused key is a 502 naming the OAuth error; the failure is not cached', async () => {
    const stranger = new TokenIssuer().newServiceAccount(tokenUri, 'elsewhere');
    const src = googleCredentialSource({ serviceAccount: stranger }, executor, now);
    const e = await rejection(src.headers());
    expect(e).toBeInstanceOf(GatewayError);
    expect((e as GatewayError).status).toBe(502);
    expect(e.message).toContain('invalid_grant');
    expect(e.message).not.toContain('PRIVATE KEY');
    issuer.trust(stranger);
    expect((await src.headers())['authorization']).toMatch(/^Bearer ya29\.sim-/);
    expect(sim.received('POST', '/token')).toHaveLength(2);
  });

  it('keeps using a still-valid token when an early refresh fails', async () => {
    const src = googleCredentialSource({ serviceAccount: key }, executor, now);
    const first = await src.headers();
    clock += 57 * 60_000;
    sim.inject({ kind: 'status', status: 503, json: { error: 'temporarily_unavailable' } }, 1, /\/token$/);
    expect(await src.headers()).toEqual(first);
    clock += 3 * 60_000; // now past expiry: the failure must surface
    sim.inject({ kind: 'status', status: 503, json: { error: 'temporarily_unavailable' } }, 1, /\/token$/);
    await expect(src.headers()).rejects.toThrow(/HTTP 503/);
  });

  it('signs with the key file as read when its options were first read, and honours its token_uri', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'veo-key-'));
    const path = join(dir, 'sa.json');
    writeFileSync(path, JSON.stringify(key));
    const options = { key_file: path };
    const read = googleAuthOptionsFrom(options);
    // Read once: what the upstream signs with is what the redaction was given at start, whatever the file holds later.
    writeFileSync(path, 'replaced');
    expect(googleAuthOptionsFrom(options)).toEqual(read);
    const src = googleCredentialSource(googleAuthOptionsFrom(options), executor, now);
    expect((await src.headers())['authorization']).toMatch(/^Bearer ya29\.sim-/);
    expect(sim.received('POST', '/token')).toHaveLength(1);

    const missing = googleCredentialSource(googleAuthOptionsFrom({ key_file: join(dir, 'absent.json') }), executor, now);
    const e = await rejection(missing.headers());
    expect((e as GatewayError).status).toBe(500);
    expect(e.message).toContain('absent.json');
  });

  it('rejects expired or far-future assertions at the simulator, as Google does', async () => {
    const skewed = googleCredentialSource({ serviceAccount: key }, executor, () => clock + 2 * 3600_000);
    await expect(skewed.headers()).rejects.toThrow(/invalid_grant/);
  });
});
