import { isIP } from 'node:net';
import {
  firstHostIn, INTERNAL_HOST, INTERNAL_URL, isConfiguredHost, isHostName, isInternalAddress, isInternalName, NETWORK_SCHEMES, normalHost, UPSTREAM_HOST,
} from './redact-hosts.js';

/**
 * Internal addresses in what an upstream says (redact.ts applies this to upstream text only: error
 * messages, params, vendor_data, SSE error events; never to access lines or to what a client sends).
 * An upstream, or the proxy in front of it, can quote where it failed to connect ("connect
 * ECONNREFUSED http://10.0.3.4:8080/internal/..."), and it can quote the operator's own upstream
 * address (a private resource host): neither is the client's business. So:
 *
 * - a URL (scheme://...) whose host is internal becomes INTERNAL_URL, path and query included;
 * - an internal host or IP address standing on its own becomes INTERNAL_HOST, its port included
 *   (and its path, if one follows: then INTERNAL_URL);
 * - a host of one of the upstream's configured URLs (its base URL, and any option named *_url or
 *   *_endpoint), or a name under one ("bucket.storage.example.net"), becomes UPSTREAM_HOST, with the
 *   whole URL when it is one; public hosts too: the gateway does not tell clients which account at
 *   which vendor served them.
 *
 * Internal: a loopback, private, link-local, CGNAT or unique-local address (IPv4 or IPv6), "localhost",
 * a name ending in one of INTERNAL_SUFFIXES (redact-hosts.ts), and, in a URL of a network scheme, a
 * single-label host ("http://video-proxy:8080"). A single word on its own, "localhost" aside, is never
 * taken for a host.
 *
 * Linear in the text: URLs are found from their "://" (the scheme read backwards no further than the
 * previous one), and hosts are maximal runs of host characters, each read a bounded number of times.
 */

/** The placeholder for a URL of `scheme` with `authority`, or undefined to keep it. */
function urlHostPlaceholder(scheme: string, authority: string, configured: ReadonlySet<string>): string | undefined {
  // A file on the upstream's own machine ("file:///var/lib/...").
  if (authority === '') return scheme === 'file' ? INTERNAL_URL : undefined;
  const written = hostOf(authority);
  const host = normalHost(written);
  if (host === '') return undefined;
  if (isConfiguredHost(host, configured)) return UPSTREAM_HOST;
  if (isInternalAddress(host)) return INTERNAL_URL;
  // In brackets only an IPv6 address is a host ("[redacted]" is what an earlier redaction left).
  if (written.startsWith('[')) return undefined;
  if (!isHostName(host)) return undefined;
  if (!host.includes('.')) return NETWORK_SCHEMES.has(scheme) ? INTERNAL_URL : undefined;
  if (isInternalName(host)) return INTERNAL_URL;
  // Numeric spellings of an IPv4 address (0x7f.1, 2130706433 is single-label above): as a browser reads them.
  if (/^[0-9a-fx.]+$/.test(host)) {
    try {
      if (isInternalAddress(new URL(`http://${host}/`).hostname)) return INTERNAL_URL;
    } catch {
      // Not an address after all.
    }
  }
  return undefined;
}

/** Replaces internal URLs and hosts, and those of the upstream's configured URLs (`configured`, see normalHost). */
export function redactInternalUrls(text: string, configured: ReadonlySet<string>): string {
  let out = text.includes(':/') || text.includes(':\\/') ? replaceUrls(text, configured) : text;
  if (out.includes('.') || out.includes(':') || /localhost/i.test(out)) out = replaceHosts(out, configured);
  return out;
}

/** "://", or ":\/\/" in JSON from an encoder that escapes "/". */
const SCHEME_END = /:(?:\/\/|\\\/\\\/)/g;

function replaceUrls(text: string, configured: ReadonlySet<string>): string {
  let out = '';
  let copied = 0;
  // No scheme is read back past here: the previous URL's authority, or the end of one replaced.
  let floor = 0;
  SCHEME_END.lastIndex = 0;
  for (let m = SCHEME_END.exec(text); m !== null; m = SCHEME_END.exec(text)) {
    const schemeStart = schemeBefore(text, m.index, floor);
    const authStart = m.index + m[0].length;
    const authEnd = authorityEnd(text, authStart);
    floor = authStart;
    let placeholder = urlHostPlaceholder(text.slice(schemeStart, m.index).toLowerCase(), text.slice(authStart, authEnd), configured);
    // Whatever the host, an internal or configured one anywhere in the authority (a proxy's userinfo,
    // a mangled host) takes the URL with it: the host rule would otherwise cut the authority apart.
    placeholder ??= { [UPSTREAM_HOST]: UPSTREAM_HOST, [INTERNAL_HOST]: INTERNAL_URL }[firstHostIn(text, authStart, authEnd, configured, escapeTail)?.placeholder ?? ''];
    if (placeholder === undefined) {
      SCHEME_END.lastIndex = authStart;
      continue;
    }
    const end = trimEnd(text, schemeStart, authStart, startsPath(text, authEnd) ? pathEnd(text, authEnd) : authEnd);
    out += text.slice(copied, schemeStart) + placeholder;
    copied = floor = end;
    SCHEME_END.lastIndex = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

const isLetter = (c: number): boolean => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isHex = (c: number): boolean => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

/**
 * Where the scheme ending at `end` starts: letters and digits, from a letter, not before `floor`.
 * Of "svn+ssh" only "ssh": what precedes a "+" or "-" may be the end of a host ("example.com+file://").
 */
function schemeBefore(text: string, end: number, floor: number): number {
  let s = end;
  while (s > floor && (isLetter(text.charCodeAt(s - 1)) || isDigit(text.charCodeAt(s - 1)))) s--;
  s += escapeTail(text, s, floor);
  while (s < end && !isLetter(text.charCodeAt(s))) s++;
  return s;
}

/**
 * How many characters at `i` belong to a JSON escape begun by the backslash before it ("\n", "\u00e9"):
 * a replacement starting inside one would leave the JSON text broken.
 */
function escapeTail(text: string, i: number, floor: number): number {
  let slashes = 0;
  while (i - slashes - 1 >= floor && text.charCodeAt(i - slashes - 1) === 0x5c) slashes++;
  if (slashes % 2 === 0) return 0;
  if (text.charCodeAt(i) !== 0x75) return 1;
  let n = 1;
  while (n < 5 && isHex(text.charCodeAt(i + n))) n++;
  return n;
}

/** Characters of an authority (userinfo@host:port; IPv6 in brackets). */
function isAuthorityChar(c: number): boolean {
  return isLetter(c) || isDigit(c) || (c < 0x80 && '-._~%!$&*+=:@[]'.includes(String.fromCharCode(c)));
}

/** The end of the authority from `start`: at the first character that is not one, or where another URL starts. */
function authorityEnd(text: string, start: number): number {
  let i = start;
  let open = false;
  while (i < text.length && isAuthorityChar(text.charCodeAt(i))) {
    const c = text.charCodeAt(i);
    if (c === 0x3a && (text.startsWith('//', i + 1) || text.startsWith('\\/\\/', i + 1))) return schemeBefore(text, i, start);
    // Brackets only around an IPv6 host, at the start of the host (a "[" elsewhere is the text's).
    if (c === 0x5b && (open || (i > start && text.charCodeAt(i - 1) !== 0x40))) return i;
    if (c === 0x5d && !open) return i;
    if (c === 0x5b || c === 0x5d) open = c === 0x5b;
    i++;
  }
  return i;
}

/**
 * The host of an authority as written: after any userinfo, before any port. An IPv6 address written
 * without brackets ("http://::1:8080") is taken whole, without the port if it has one.
 */
function hostOf(authority: string): string {
  const a = authority.slice(authority.lastIndexOf('@') + 1);
  if (a.startsWith('[')) {
    const close = a.indexOf(']');
    return close < 0 ? a : a.slice(0, close + 1);
  }
  const colon = a.indexOf(':');
  if (colon < 0) return a;
  if (a.length <= 200 && a.indexOf(':', colon + 1) >= 0) {
    if (isIP(normalHost(a)) === 6) return a;
    const port = a.lastIndexOf(':');
    if (/^\d+$/.test(a.slice(port + 1)) && isIP(normalHost(a.slice(0, port))) === 6) return a.slice(0, port);
  }
  return a.slice(0, colon);
}

/** Whether a path, query or fragment starts at `i` ("/", "?", "#", or "\/"). */
function startsPath(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  return c === 0x2f || c === 0x3f || c === 0x23 || (c === 0x5c && text.charCodeAt(i + 1) === 0x2f);
}

/** Printable ASCII but quotes, angle brackets, braces, "|", "^", "`" and the backslash. */
const isPathChar = (c: number): boolean => c > 0x20 && c < 0x7f && !'"\'<>{}|^`\\'.includes(String.fromCharCode(c));

/** The end of the path, query and fragment from `i`: "\/" and a JSON "\uXXXX" of a path character go on. */
function pathEnd(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (isPathChar(c)) i++;
    else if (c === 0x5c && text.charCodeAt(i + 1) === 0x2f) i += 2;
    else if (c === 0x5c && text.charCodeAt(i + 1) === 0x75 && isEscapedPathChar(text, i + 2)) i += 6;
    else return i;
  }
}

function isEscapedPathChar(text: string, i: number): boolean {
  for (let k = 0; k < 4; k++) if (!isHex(text.charCodeAt(i + k))) return false;
  return isPathChar(parseInt(text.slice(i, i + 4), 16));
}

/**
 * `end` without the punctuation of the sentence around the URL: trailing ".,;:!?", and a ")" or
 * "]" that closes nothing opened in [start, end). Never shorter than `min`.
 */
function trimEnd(text: string, start: number, min: number, end: number): number {
  let parens = 0;
  let brackets = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    parens += c === 0x28 ? 1 : c === 0x29 ? -1 : 0;
    brackets += c === 0x5b ? 1 : c === 0x5d ? -1 : 0;
  }
  while (end > min) {
    const c = text.charCodeAt(end - 1);
    if (c === 0x29 && parens < 0) parens++;
    else if (c === 0x5d && brackets < 0) brackets++;
    else if (!'.,;:!?'.includes(text[end - 1]!)) break;
    end--;
  }
  return end;
}

/** Replaces every internal or configured host standing on its own, with its port and any path after it. */
function replaceHosts(text: string, configured: ReadonlySet<string>): string {
  let out = '';
  let copied = 0;
  for (let found = firstHostIn(text, 0, text.length, configured, escapeTail); found; found = firstHostIn(text, copied, text.length, configured, escapeTail)) {
    let end = found.end;
    let placeholder = found.placeholder;
    // A path after it ("10.0.3.4:8080/internal/x") goes with it.
    if (startsPath(text, end) && text.charCodeAt(end) !== 0x3f && text.charCodeAt(end) !== 0x23) {
      end = trimEnd(text, found.start, end, pathEnd(text, end));
      if (placeholder === INTERNAL_HOST) placeholder = INTERNAL_URL;
    }
    out += text.slice(copied, found.start) + placeholder;
    copied = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}
