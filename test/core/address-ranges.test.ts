import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { redact } from '../../src/core/redact.js';
import { isInternalAddress } from '../../src/core/redact-hosts.js';
import { isBlockedAddress } from '../../src/http/ssrf.js';

/**
 * The one definition of the address ranges (core/address-ranges.ts) and its two users: the SSRF
 * guard refuses the internal and the reserved ranges; the redaction of upstream text hides the
 * internal ones only (an upstream quoting a documentation address hides nothing of the operator's).
 */
// [an address, internal, blocked]: the first and last address of each range, and the one past it.
const TABLE: [string, boolean, boolean][] = [
  ['0.0.0.1', true, true],
  ['10.0.0.0', true, true],
  ['10.255.255.255', true, true],
  ['11.0.0.0', false, false],
  ['100.64.0.0', true, true],
  ['100.127.255.255', true, true],
  ['100.128.0.0', false, false],
  ['127.0.0.1', true, true],
  ['169.254.169.254', true, true],
  ['172.16.0.1', true, true],
  ['172.31.255.255', true, true],
  ['172.32.0.0', false, false],
  ['192.168.1.1', true, true],
  ['192.0.0.8', false, true],
  ['192.0.2.1', false, true],
  ['198.18.0.1', false, true],
  ['198.19.255.255', false, true],
  ['198.20.0.0', false, false],
  ['198.51.100.7', false, true],
  ['203.0.113.9', false, true],
  ['224.0.0.1', false, true],
  ['255.255.255.255', false, true],
  ['8.8.8.8', false, false],
  ['::1', true, true],
  ['::10.0.0.1', true, true],
  ['::ffff:10.0.0.1', true, true],
  ['fd00::1', true, true],
  ['fe80::1', true, true],
  ['fec0::1', true, true],
  ['::ffff:0:7f00:1', false, true],
  ['64:ff9b::a00:1', false, true],
  ['100::1', false, true],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', false, true],
  ['2001:db8::1', false, true],
  ['2002:a00:1::', false, true],
  ['ff02::1', false, true],
  ['2607:f8b0:4004:800::200e', false, false],
];

describe('the shared address ranges', () => {
  it.each(TABLE)('%s: internal %s, blocked %s', (address, internal, blocked) => {
    expect(isInternalAddress(address)).toBe(internal);
    expect(isBlockedAddress(address)).toBe(blocked);
    // As the redaction of upstream text sees it.
    const text = `connect ECONNREFUSED [${address}]:443`;
    expect(redact(text, undefined, new Set()), text).toBe(internal ? 'connect ECONNREFUSED [internal-host]' : text);
  });

  it('blocks every address the redaction takes for internal', () => {
    const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((b) => b.join('.'));
    const v6 = fc.ipV6();
    // Near the internal ranges, where a table that drifted apart would show.
    const near = fc.tuple(fc.constantFrom('10', '100', '127', '169', '172', '192', '0'), fc.nat(255), fc.nat(255), fc.nat(255)).map((b) => b.join('.'));
    const mapped = near.map((a) => `::ffff:${a}`);
    fc.assert(
      fc.property(fc.oneof(v4, v6, near, mapped), (address) => {
        if (isInternalAddress(address)) expect(isBlockedAddress(address)).toBe(true);
      }),
      { numRuns: 20000 },
    );
  });
});
