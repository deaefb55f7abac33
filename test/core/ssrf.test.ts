import { describe, expect, it } from 'vitest';
import { isBlockedAddress } from '../../src/http/ssrf.js';

describe('SSRF address guard', () => {
  it('blocks private, loopback, link-local and mapped addresses', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '0.0.0.0', '100.64.0.1', '::1', '::', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '224.0.0.1', '::ffff:7f00:1', '::ffff:a9fe:a9fe', '[::ffff:7f00:1]', '::127.0.0.1', '64:ff9b::a00:1'])
      expect(isBlockedAddress(a), a).toBe(true);
  });
  it('blocks the IPv6 forms that carry an IPv4 address, and site-local', () => {
    // IPv4-translated (::ffff:0:a.b.c.d), local-use NAT64, 6to4 of 127.0.0.1 and 10.0.0.1, Teredo, fec0::/10.
    for (const a of ['::ffff:0:7f00:1', '::ffff:0:127.0.0.1', '64:ff9b:1::a00:1', '2002:7f00:1::1', '2002:a00:1::', '2001:0:4136:e378:8000:63bf:3fff:fdd2', 'fec0::1', '[fec0::1]'])
      expect(isBlockedAddress(a), a).toBe(true);
  });
  it('allows public addresses', () => {
    for (const a of ['8.8.8.8', '142.250.1.1', '2607:f8b0:4004:800::200e', '172.32.0.1', '2001:4860:4860::8888', '2a00:1450:4001::200e']) expect(isBlockedAddress(a), a).toBe(false);
  });
});
