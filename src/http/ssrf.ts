import { BlockList, isIP } from 'node:net';

/**
 * Addresses a client must not make the gateway reach: loopback, private, link-local, CGNAT,
 * multicast, unspecified, documentation and reserved ranges. Node's BlockList also matches
 * IPv4-mapped IPv6 addresses in any spelling (::ffff:127.0.0.1 and ::ffff:7f00:1 alike).
 */
const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(net, prefix, 'ipv4');
// Besides the reserved ranges, every IPv6 form that carries an IPv4 address a router or the host
// may translate back: IPv4-compatible (::/96), IPv4-translated (::ffff:0:0:0/96), NAT64 (well-known
// and local-use), 6to4 (2002::/16) and Teredo (2001::/32); and the deprecated site-local fec0::/10.
for (const [net, prefix] of [
  ['::', 128], ['::1', 128], ['::', 96], ['::ffff:0:0:0', 96], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64],
  ['2001::', 32], ['2001:db8::', 32], ['2002::', 16], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) blocked.addSubnet(net, prefix, 'ipv6');

export function isBlockedAddress(address: string): boolean {
  const a = address.replace(/^\[|\]$/g, '');
  const kind = isIP(a);
  if (kind === 4) return blocked.check(a, 'ipv4');
  if (kind === 6) {
    // BlockList matches IPv4-mapped addresses against the IPv4 rules; check the hex form too.
    const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(a);
    if (mapped) {
      const hi = parseInt(mapped[1]!, 16);
      const lo = parseInt(mapped[2]!, 16);
      return blocked.check(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`, 'ipv4');
    }
    return blocked.check(a, 'ipv6');
  }
  return true; // not an IP at all: refuse
}
