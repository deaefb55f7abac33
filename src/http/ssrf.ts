import { isIP } from 'node:net';
import { BLOCKED_RANGES } from '../core/address-ranges.js';

/**
 * Addresses a client must not make the gateway reach: loopback, private, link-local, CGNAT,
 * multicast, unspecified, documentation and reserved ranges, and the IPv6 forms that carry an IPv4
 * address (core/address-ranges.ts, shared with the redaction). Node's BlockList also matches
 * IPv4-mapped IPv6 addresses in any spelling (::ffff:127.0.0.1 and ::ffff:7f00:1 alike).
 */
export function isBlockedAddress(address: string): boolean {
  const a = address.replace(/^\[|\]$/g, '');
  const kind = isIP(a);
  if (kind === 4) return BLOCKED_RANGES.check(a, 'ipv4');
  if (kind === 6) {
    // BlockList matches IPv4-mapped addresses against the IPv4 rules; check the hex form too.
    const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(a);
    if (mapped) {
      const hi = parseInt(mapped[1]!, 16);
      const lo = parseInt(mapped[2]!, 16);
      return BLOCKED_RANGES.check(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`, 'ipv4');
    }
    return BLOCKED_RANGES.check(a, 'ipv6');
  }
  return true; // not an IP at all: refuse
}
