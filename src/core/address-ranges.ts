import { BlockList } from 'node:net';

/**
 * The address ranges of the gateway, defined once for their two users: the SSRF guard
 * (http/ssrf.ts) refuses to make any of them reach a client's URL, and the redaction
 * (redact-hosts.ts) hides the internal ones when an upstream quotes one.
 */

type Range = readonly [network: string, prefix: number];

/**
 * Internal: the networks of a site. Loopback, private, link-local (the cloud metadata address among
 * them), CGNAT and "this network" (0/8); IPv6 unique-local, link-local and the deprecated site-local,
 * and ::/96, which holds loopback, the unspecified address and the IPv4-compatible form (::10.0.0.1,
 * and Node's "::1:3000" read as one address). Node's BlockList also matches the IPv4 rules against
 * IPv4-mapped IPv6 addresses (::ffff:10.0.0.1).
 */
const INTERNAL_V4: readonly Range[] = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.168.0.0', 16],
];
const INTERNAL_V6: readonly Range[] = [['::', 96], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10]];

/**
 * Reserved: not a site's own, so an upstream quoting one hides nothing, but no address a client may
 * make the gateway reach either. IETF protocol assignments, documentation and benchmarking ranges,
 * multicast and the reserved 240/4; and every IPv6 form that carries an IPv4 address a router or
 * the host may translate back: IPv4-translated (::ffff:0:0:0/96), NAT64 (well-known and local-use),
 * discard-only (100::/64), Teredo (2001::/32), documentation, 6to4 (2002::/16) and multicast.
 */
const RESERVED_V4: readonly Range[] = [
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
];
const RESERVED_V6: readonly Range[] = [
  ['::ffff:0:0:0', 96], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 32], ['2001:db8::', 32], ['2002::', 16], ['ff00::', 8],
];

function blockList(v4: readonly Range[], v6: readonly Range[]): BlockList {
  const list = new BlockList();
  for (const [net, prefix] of v4) list.addSubnet(net, prefix, 'ipv4');
  for (const [net, prefix] of v6) list.addSubnet(net, prefix, 'ipv6');
  return list;
}

/** The internal ranges: what the redaction hides. */
export const INTERNAL_RANGES: BlockList = blockList(INTERNAL_V4, INTERNAL_V6);

/** The internal and the reserved ranges: what the SSRF guard refuses. */
export const BLOCKED_RANGES: BlockList = blockList([...INTERNAL_V4, ...RESERVED_V4], [...INTERNAL_V6, ...RESERVED_V6]);
