import { isIP } from 'node:net';
import { INTERNAL_RANGES } from './address-ranges.js';

/**
 * What the internal-address rule of the redaction (redact-urls.ts) takes for internal, and where it
 * finds such a host, or one of the upstream's own, in a run of host characters.
 */

export const INTERNAL_URL = '[internal-url]';
export const INTERNAL_HOST = '[internal-host]';
export const UPSTREAM_HOST = '[upstream]';

/** Name suffixes that only resolve inside a network: cluster DNS, mDNS, corporate and home LANs. */
const INTERNAL_SUFFIXES = ['.internal', '.local', '.localdomain', '.localhost', '.svc', '.corp', '.lan', '.intranet', '.home.arpa'];

/** Schemes whose authority is a network host (a single label there names a machine; in gs:// or s3:// it names a bucket). */
export const NETWORK_SCHEMES = new Set([
  'http', 'https', 'ws', 'wss', 'ftp', 'ftps', 'sftp', 'ssh', 'tcp', 'udp', 'tls', 'grpc', 'grpcs', 'redis', 'rediss',
  'postgres', 'postgresql', 'mysql', 'mongodb', 'amqp', 'amqps', 'nats', 'kafka', 'ldap', 'ldaps', 'smtp', 'smtps',
]);

/** An address in the internal ranges (address-ranges.ts); "::" alone (any address, the unspecified one) names no machine. */
export function isInternalAddress(ip: string): boolean {
  const kind = isIP(ip);
  return kind !== 0 && ip !== '::' && INTERNAL_RANGES.check(ip, kind === 4 ? 'ipv4' : 'ipv6');
}

/** A host name, letters lower-case: labels of [a-z0-9_-] between dots, each starting and ending with no "-". */
export function isHostName(h: string): boolean {
  if (h.length === 0 || h.length > 253) return false;
  let prev = 0x2e;
  for (let i = 0; i <= h.length; i++) {
    const c = i < h.length ? h.charCodeAt(i) : 0x2e;
    if (c === 0x2e) {
      if (prev === 0x2e || prev === 0x2d) return false;
    } else if (c === 0x2d) {
      if (prev === 0x2e) return false;
    } else if (!((c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x5f)) return false;
    prev = c;
  }
  return true;
}

/** The lower-cased host as written: no brackets, no trailing dot, no IPv6 zone. */
export function normalHost(h: string): string {
  let out = h.toLowerCase();
  if (out.startsWith('[') && out.endsWith(']')) out = out.slice(1, -1);
  const zone = out.indexOf('%');
  if (zone >= 0 && out.includes(':')) out = out.slice(0, zone);
  let end = out.length;
  while (end > 0 && out.charCodeAt(end - 1) === 0x2e) end--;
  return out.slice(0, end);
}

export const isInternalName = (host: string): boolean => host === 'localhost' || INTERNAL_SUFFIXES.some((s) => host.endsWith(s));

/**
 * Whether `host` (see normalHost) is one of the `configured` hosts or a name under one: a bucket or
 * resource host the upstream puts in front of it ("bucket.storage.example.net" under
 * "storage.example.net"). Not under an address ("1.10.0.0.5" is no name under "10.0.0.5").
 */
export function isConfiguredHost(host: string, configured: ReadonlySet<string>): boolean {
  if (configured.has(host)) return true;
  for (const c of configured) {
    const dot = host.length - c.length - 1;
    if (dot > 0 && host.charCodeAt(dot) === 0x2e && host.endsWith(c) && isIP(c) === 0) return true;
  }
  return false;
}

export interface Found {
  start: number;
  end: number;
  placeholder: string;
}

/** Characters of host names, IPv4 and IPv6 addresses (brackets, zones and ports included). */
const isHostRunChar = (c: number): boolean =>
  (c >= 0x30 && c <= 0x3a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x2e || c === 0x2d || c === 0x25 || c === 0x5b || c === 0x5d;

/** A longer run holds no IPv6 address worth reading (the longest is 45 characters, under 100 with zone and port). */
const MAX_IPV6_RUN = 200;

/**
 * The first internal or configured host in [start, end) of `text` that stands on its own (in a
 * maximal run of host characters, a part between ":", "[", "]" and "%"), with its port.
 * `escapeTail` says how much of a run a JSON escape before it owns ("\n10.0.0.1": the "n").
 * Linear: a run is read once, and at most MAX_IPV6_RUN characters of it again after each host found in it.
 */
export function firstHostIn(
  text: string, start: number, end: number, configured: ReadonlySet<string>, escapeTail: (text: string, i: number, floor: number) => number,
): Found | undefined {
  for (let i = start; i < end; ) {
    if (!isHostRunChar(text.charCodeAt(i))) {
      i++;
      continue;
    }
    const runStart = i + escapeTail(text, i, start);
    let probe = runStart;
    while (probe < end && probe - runStart <= MAX_IPV6_RUN && isHostRunChar(text.charCodeAt(probe))) probe++;
    const v6 = probe - runStart <= MAX_IPV6_RUN && !isHostRunChar(text.charCodeAt(probe)) ? ipv6In(text, runStart, probe) : undefined;
    // The first of the two: the other may be the rest of the run, found again after it.
    const named = namedHostIn(text, runStart, v6 ? v6.start : end, configured);
    if (named.found ?? v6) return named.found ?? v6;
    i = Math.max(named.next, i + 1);
  }
  return undefined;
}

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;

/** The port after a host ending at `i` (":8080"), or nothing. */
function portEnd(text: string, i: number, limit: number): number {
  if (text.charCodeAt(i) !== 0x3a || !isDigit(text.charCodeAt(i + 1))) return i;
  let j = i + 1;
  while (j < limit && isDigit(text.charCodeAt(j))) j++;
  return j;
}

/**
 * An internal IPv6 address in the run [start, end): bracketed ("[fd00::1]:443"), or bare after any
 * leading words ("address:fe80::1%eth0", Node's "::1:3000" with its port).
 */
function ipv6In(text: string, start: number, end: number): Found | undefined {
  if (end - start > MAX_IPV6_RUN) return undefined;
  const run = text.slice(start, end);
  if (!run.includes(':')) return undefined;
  const open = run.indexOf('[');
  if (open >= 0) {
    const close = run.indexOf(']', open);
    if (close < 0 || !isInternalAddress(normalHost(run.slice(open, close + 1)))) return undefined;
    return { start: start + open, end: portEnd(text, start + close + 1, end), placeholder: INTERNAL_HOST };
  }
  // Skip leading parts that cannot be IPv6 groups ("address:").
  let from = 0;
  for (let colon = run.indexOf(':'); colon >= 0; colon = run.indexOf(':', from)) {
    const part = run.slice(from, colon);
    if (part === '' || /^[0-9a-f]{1,4}$/i.test(part)) break;
    from = colon + 1;
  }
  let candidate = run.slice(from).replace(/[.:]+$/, '');
  if (!/[0-9a-f]/i.test(candidate)) return undefined;
  if (!isInternalAddress(normalHost(candidate))) {
    // A port written after a bare address: "::1:3000".
    const cut = candidate.lastIndexOf(':');
    if (cut < 0 || !/^\d+$/.test(candidate.slice(cut + 1)) || !isInternalAddress(normalHost(candidate.slice(0, cut)))) return undefined;
  }
  candidate = run.slice(from, from + candidate.length);
  return { start: start + from, end: start + from + candidate.length, placeholder: INTERNAL_HOST };
}

/**
 * The first internal or configured host among the parts of the run from `start` (before `limit`)
 * between ":", "[", "]" and "%": an IPv4 address, "localhost", a name with an internal suffix, or a
 * configured host; else where the run ends.
 */
function namedHostIn(text: string, start: number, limit: number, configured: ReadonlySet<string>): { found?: Found; next: number } {
  for (let a = start; ; ) {
    let b = a;
    for (let c = text.charCodeAt(b); b < limit && isHostRunChar(c) && c !== 0x3a && c !== 0x5b && c !== 0x5d && c !== 0x25; c = text.charCodeAt(++b));
    // Without the punctuation around it: "...10.0.0.1." at the end of a sentence.
    let hostStart = a;
    while (hostStart < b && (text.charCodeAt(hostStart) === 0x2e || text.charCodeAt(hostStart) === 0x2d)) hostStart++;
    let hostEnd = b;
    while (hostEnd > hostStart && text.charCodeAt(hostEnd - 1) === 0x2e) hostEnd--;
    const host = hostEnd - hostStart > 253 ? '' : text.slice(hostStart, hostEnd).toLowerCase();
    const placeholder =
      host === '' ? undefined : isConfiguredHost(host, configured) ? UPSTREAM_HOST : isInternalAddress(host) || (isHostName(host) && isInternalName(host)) ? INTERNAL_HOST : undefined;
    // Its port goes with it, also after the trailing dot of a fully qualified name ("api.example.com.:443").
    const port = portEnd(text, b, limit);
    if (placeholder) return { found: { start: hostStart, end: hostEnd === b || port > b ? port : hostEnd, placeholder }, next: b };
    // A separator goes on to the next part; anything else ends the run.
    if (b >= limit || !isHostRunChar(text.charCodeAt(b))) return { next: b };
    a = b + 1;
  }
}
