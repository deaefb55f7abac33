import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { call, startTestGateway } from '../helpers/gateway.js';

/**
 * server.trust_proxy decides which X-Forwarded-For entry is the client address, and the sign-in
 * limit is kept per client address. A proxy appends the address it saw on the right; everything to
 * its left is whatever the client wrote. Trusting every hop made the leftmost entry the address, so
 * a client could rotate it past the limit, or write the operator's address to lock the operator out.
 */
const wrongKey = (i: number) => `sk-gw-${String(i).padStart(43, 'A')}`;

describe('server.trust_proxy', () => {
  it('with a hop count of 1, rotating the leftmost X-Forwarded-For entry does not reset the sign-in limit', async () => {
    const gw = await startTestGateway({ server: { trust_proxy: 1 } });
    try {
      const from = (xff: string, token: string) => call(gw, 'POST', '/console/session', { body: { token }, headers: { 'x-forwarded-for': xff } });
      for (let i = 0; i < 10; i++) expect((await from(`10.0.0.${i}, 203.0.113.7`, wrongKey(i))).status).toBe(401);
      const rotated = await from('10.0.0.99, 203.0.113.7', gw.adminToken);
      expect(rotated.status).toBe(429);
      expect(Number(rotated.headers.get('retry-after'))).toBeGreaterThan(0);
      // Naming another address on the left does not make the request that address's either.
      expect((await from('203.0.113.8, 203.0.113.7', gw.adminToken)).status).toBe(429);
      // The address the proxy saw is what counts: another client is unaffected.
      expect((await from('203.0.113.7, 198.51.100.9', gw.adminToken)).status).toBe(200);
    } finally {
      await gw.close();
    }
  });

  it('with a hop count of 1, the cookie is Secure when the proxy says the request came over HTTPS', async () => {
    const gw = await startTestGateway({ server: { trust_proxy: 1 } });
    try {
      const r = await call(gw, 'POST', '/console/session', { body: { token: gw.adminToken }, headers: { 'x-forwarded-proto': 'https' } });
      expect(r.status).toBe(200);
      expect(r.headers.get('set-cookie')).toMatch(/; Secure/);
    } finally {
      await gw.close();
    }
  });

  it('with a list of proxy addresses, only entries added by those proxies are believed', async () => {
    const gw = await startTestGateway({ server: { trust_proxy: ['127.0.0.1/8', '::1'] } });
    try {
      const from = (xff: string) => call(gw, 'POST', '/console/session', { body: { token: 'wrong' }, headers: { 'x-forwarded-for': xff } });
      for (let i = 0; i < 10; i++) expect((await from(`10.0.0.${i}, 203.0.113.7`)).status).toBe(401);
      expect((await from('10.0.0.99, 203.0.113.7')).status).toBe(429);
    } finally {
      await gw.close();
    }
  });

  it('refuses true (every hop trusted) and malformed values at load, naming the fix', () => {
    const load = (trust_proxy: unknown) => () => validateConfig({ server: { trust_proxy } }, 'gateway.yaml');
    expect(load(true)).toThrow(/server\.trust_proxy: .*number of proxies/);
    for (const bad of [0, -1, 1.5, [], ['not-an-address'], ['10.0.0.0/33'], 'yes'])
      expect(load(bad), JSON.stringify(bad)).toThrow(/server\.trust_proxy/);
    expect(validateConfig({}, 'x').server.trust_proxy).toBe(false);
    expect(validateConfig({ server: { trust_proxy: false } }, 'x').server.trust_proxy).toBe(false);
    expect(validateConfig({ server: { trust_proxy: 2 } }, 'x').server.trust_proxy).toBe(2);
    expect(validateConfig({ server: { trust_proxy: ['10.0.0.0/8', 'loopback', '::1'] } }, 'x').server.trust_proxy).toEqual(['10.0.0.0/8', 'loopback', '::1']);
    // Fastify's comma-separated form, as an environment variable would give it.
    expect(validateConfig({ server: { trust_proxy: '10.0.0.1, 10.0.0.2' } }, 'x').server.trust_proxy).toEqual(['10.0.0.1', '10.0.0.2']);
  });
});
