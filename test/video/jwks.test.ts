import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Ed25519Jwks, JwksUnavailable } from '../../src/http/jwks.js';

/** The key cache behind callback signatures: cached, refreshed at a bounded rate, failing closed. */
const jwk = () => {
  const { x } = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
  return { kty: 'OKP', crv: 'Ed25519', x: x! };
};

function harness(answer: () => { status: number; body: unknown }) {
  let t = 1_000_000;
  let fetches = 0;
  const jwks = new Ed25519Jwks(
    async () => {
      fetches++;
      const a = answer();
      return { status: a.status, raw: Buffer.from(typeof a.body === 'string' ? a.body : JSON.stringify(a.body)) };
    },
    { ttlMs: 10_000, retryAfterFailureMs: 1_000, minRefreshMs: 5_000, now: () => t },
  );
  return { jwks, fetches: () => fetches, advance: (ms: number) => (t += ms) };
}

describe('Ed25519Jwks', () => {
  it('fetches once for concurrent callers, serves the cache until the TTL, then fetches again', async () => {
    const h = harness(() => ({ status: 200, body: { keys: [jwk(), { kty: 'RSA', n: 'x', e: 'AQAB' }] } }));
    const [a, b] = await Promise.all([h.jwks.keys('u'), h.jwks.keys('u')]);
    expect(a).toHaveLength(1); // the RSA key is not an Ed25519 key
    expect(b).toBe(a);
    expect(h.fetches()).toBe(1);
    h.advance(9_000);
    await h.jwks.keys('u');
    expect(h.fetches()).toBe(1);
    h.advance(2_000);
    await h.jwks.keys('u');
    expect(h.fetches()).toBe(2);
  });

  it('a refetch for an unknown signature is granted at most once per minRefreshMs', async () => {
    const h = harness(() => ({ status: 200, body: { keys: [jwk()] } }));
    await h.jwks.keys('u');
    for (let i = 0; i < 10; i++) await h.jwks.keys('u', true);
    expect(h.fetches()).toBe(1);
    h.advance(5_000);
    for (let i = 0; i < 10; i++) await h.jwks.keys('u', true);
    expect(h.fetches()).toBe(2);
  });

  it('fails closed when the key set is unreachable or not one, and retries only after the cool-down', async () => {
    let answer: { status: number; body: unknown } = { status: 503, body: 'down' };
    const h = harness(() => answer);
    await expect(h.jwks.keys('u')).rejects.toBeInstanceOf(JwksUnavailable);
    await expect(h.jwks.keys('u')).rejects.toBeInstanceOf(JwksUnavailable);
    expect(h.fetches()).toBe(1);
    for (const body of ['not json', { keys: 'no' }, { keys: [{ kty: 'OKP', crv: 'Ed25519', x: 'short' }] }]) {
      answer = { status: 200, body };
      h.advance(1_000);
      await expect(h.jwks.keys('u')).rejects.toBeInstanceOf(JwksUnavailable);
    }
    // A padded coordinate (as some publishers send it) is accepted.
    const k = jwk();
    answer = { status: 200, body: { keys: [{ ...k, x: `${k.x}=` }] } };
    h.advance(1_000);
    expect(await h.jwks.keys('u')).toHaveLength(1);
  });

  it('keeps keys inside their lifetime when a refresh fails', async () => {
    let up = true;
    const h = harness(() => (up ? { status: 200, body: { keys: [jwk()] } } : { status: 500, body: '' }));
    const first = await h.jwks.keys('u');
    up = false;
    h.advance(6_000);
    expect(await h.jwks.keys('u', true)).toBe(first);
    h.advance(5_000); // past the TTL, and the source is still down
    await expect(h.jwks.keys('u')).rejects.toBeInstanceOf(JwksUnavailable);
  });
});
