import { describe, expect, it } from 'vitest';
import { addressBucket } from '../../src/console/sign-in-limit.js';
import { call, startTestGateway } from '../helpers/gateway.js';

/**
 * A client with an IPv6 /64 (what one subscriber or one rented server is given) can use any of its
 * 2^64 addresses. Counted one address at a time, the sign-in limit and the admin token limit would
 * let it guess without end, one new address per ten guesses; counted per /64, it gets ten.
 */
describe('the credential limits and IPv6', () => {
  it('count a /64 as one client, at the console sign-in and on /admin', async () => {
    const gw = await startTestGateway({ server: { trust_proxy: 1 } });
    try {
      const from = (xff: string, token: string) => call(gw, 'POST', '/console/session', { body: { token }, headers: { 'x-forwarded-for': xff } });
      for (let i = 1; i <= 10; i++) expect((await from(`2001:db8:aa:1::${i.toString(16)}`, 'wrong')).status).toBe(401);
      // Another address of the same /64, in another spelling: limited, even with the right token.
      const next = await from('2001:0db8:00aa:0001:ffff:ffff:ffff:ffff', gw.adminToken);
      expect(next.status).toBe(429);
      expect(next.headers.get('retry-after')).toMatch(/^\d+$/);
      expect((await call(gw, 'GET', '/admin/accounts', { headers: { 'x-forwarded-for': '2001:db8:aa:1:1234::9', authorization: `Bearer ${gw.adminToken}` } })).status).toBe(429);
      // The next /64 over, and IPv4 clients, are not.
      expect((await from('2001:db8:aa:2::1', gw.adminToken)).status).toBe(200);
      expect((await from('192.0.2.10', gw.adminToken)).status).toBe(200);

      // Wrong admin tokens on /admin count the same way.
      const admin = (xff: string, token: string) => call(gw, 'GET', '/admin/accounts', { headers: { 'x-forwarded-for': xff, authorization: `Bearer ${token}` } });
      for (let i = 1; i <= 10; i++) expect((await admin(`2001:db8:bb:7:${i}::1`, 'wrong-token')).status).toBe(401);
      expect((await admin('2001:db8:bb:7::abcd', gw.adminToken)).status).toBe(429);
    } finally {
      await gw.close();
    }
  });

  it('IPv4 addresses, written as IPv4 or as IPv6, stay one client each', async () => {
    const gw = await startTestGateway({ server: { trust_proxy: 1 } });
    try {
      const from = (xff: string, token: string) => call(gw, 'POST', '/console/session', { body: { token }, headers: { 'x-forwarded-for': xff } });
      for (let i = 1; i <= 10; i++) expect((await from(`::ffff:198.51.100.${i}`, 'wrong')).status).toBe(401);
      // Every one of those ten IPv4 clients failed once: none is limited, and an IPv4 client elsewhere neither.
      expect((await from('::ffff:198.51.100.1', gw.adminToken)).status).toBe(200);
      expect((await from('198.51.100.77', gw.adminToken)).status).toBe(200);
      for (let i = 1; i <= 9; i++) expect((await from('::ffff:c633:6405', 'wrong')).status).toBe(401);
      // 198.51.100.5 has failed ten times now, however it was written.
      expect((await from('198.51.100.5', gw.adminToken)).status).toBe(429);
    } finally {
      await gw.close();
    }
  });

  it('addressBucket', () => {
    expect(addressBucket('203.0.113.9')).toBe('203.0.113.9');
    expect(addressBucket('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(addressBucket('::FFFF:cb00:7109')).toBe('203.0.113.9');
    expect(addressBucket('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressBucket('2001:DB8:0:0:8:800:200C:417A')).toBe('2001:db8:0:0::/64');
    expect(addressBucket('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressBucket('::1')).toBe('0:0:0:0::/64');
    expect(addressBucket('64:ff9b::192.0.2.33')).toBe('64:ff9b:0:0::/64');
    expect(addressBucket('not an address')).toBe('not an address');
  });
});
