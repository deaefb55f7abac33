import { describe, expect, it } from 'vitest';
import { compileNames, compileSecrets, mayHoldShape, redact } from '../../src/core/redact.js';
import { measureLinear, SIZE_RATIO } from '../helpers/linear-time.js';

/**
 * The redaction runs on text a caller controls (the request path is in every access line), on the
 * event loop: its time must grow linearly with the text. Each case below is a text built from one
 * shape's own prefix and alphabet, repeated, the kind of run on which a pattern that starts an
 * attempt at many positions of a run, each reading to the run's end, takes quadratic time (a 256 KB
 * run of "eyJ-" took 18 s).
 *
 * A text 32 times longer must not take more than 300 times as long (test/helpers/linear-time.ts): quadratic work takes
 * 1024 times as long, linear work 32 times, and up to about 100 times on these runs as measured
 * (a large text no longer fits a cache, and makes more garbage that lives through collections).
 * A ratio of 4 (the sizes this test used before) left no room between the two: linear runs
 * measured up to 8.2 there, against a limit of 8.
 *
 * What is measured is the CPU time of this process (process.cpuUsage), not the wall clock: on a
 * machine busy with other work a run is preempted, and a long run more often than a short one, so
 * wall-clock ratios grow under load however linear the work is. Each run starts after a scavenge
 * and each time is the fastest of a few runs, so that one run does not pay for the garbage of
 * another. Anything under 250 ms passes whatever the ratio: at these sizes linear work takes
 * at most about 120 ms, quadratic work seconds.
 */

const SMALL = 16 * 1024;
/** A text SIZE_RATIO (32) times longer; the measurement is test/helpers/linear-time.ts's. */
const LARGE = SMALL * SIZE_RATIO;

const SECRET = 'sk-hostile-0123456789abcdef';
const SLASHED = 'aws/secret/Key+value/0123456789';
const SECRETS = compileSecrets([SECRET, SLASHED, 'pw\u00ff\u00fe>>>??~~\u00fb\u00ef', '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw\n-----END PRIVATE KEY-----\n', 'pass word%41&amp;']);
const B64 = Buffer.from(SECRET).toString('base64');
const HEX = Buffer.from(SECRET).toString('hex');
const HEX_SEP = HEX.replace(/(..)(?!$)/g, '$1:');
const PERCENT = HEX.replace(/(..)/g, '%$1');
/** `s` cut into lines of `width` characters by `eol`. */
const wrap = (s: string, width: number, eol: string) => (s.match(new RegExp(`.{1,${width}}`, 'g')) ?? []).join(eol);

/** `unit` repeated to `n` characters after `head`. */
function build(head: string, unit: string, n: number): string {
  return head + unit.repeat(Math.ceil((n - head.length) / unit.length)).slice(0, Math.max(0, n - head.length));
}

/** Fails the case unless `run` takes linear time from texts of SMALL to LARGE characters (made by `make`). */
function checkLinear(make: (n: number) => string, run: (text: string) => void): void {
  const { linear, detail } = measureLinear(SMALL, make, run);
  expect(linear, detail).toBe(true);
}

// [what it attacks, head, repeated unit]
const HOSTILE: [string, string, string][] = [
  ['private key: many BEGINs, no END', '', '-----BEGIN PRIVATE KEY-----\n'],
  ['private key: BEGIN, then many ENDs missing their label', '-----BEGIN PRIVATE KEY-----', '-----END A'],
  ['private key: a label that never ends', '-----BEGIN ', 'A '],
  ['private key: BEGIN, then ENDs without a label', '-----BEGIN PRIVATE KEY-----', '-----END '],
  ['private key: the label repeated', '-----BEGIN ', 'PRIVATE KEY '],
  ['private key: JSON-escaped, no END', '', '-----BEGIN RSA PRIVATE KEY-----\\n'],
  ['auth scheme: a token of dots', 'Bearer ', '.'],
  ['auth scheme: whitespace, no token', 'Bearer', ' '],
  ['auth scheme: letters only', 'Key ', 'a'],
  ['auth scheme: schemes glued by "-"', '', 'Bearer -'],
  ['auth scheme: schemes glued by "."', '', 'Key .'],
  ['auth scheme: colons', '', 'Token :'],
  ['auth scheme: Basic and base64 punctuation', '', 'Basic +/='],
  ['SigV4: empty values', '', 'Credential=,'],
  ['SigV4: repeated', '', 'Signature='],
  ['query: parameters without value', '', 'key=&'],
  ['query: parameter names without "="', '', 'api_key'],
  ['query: names glued by "-"', '', 'access-token-'],
  ['provided: whitespace, then nothing', 'api key provided:', ' '],
  ['provided: repeated', '', 'api key provided '],
  ['prefixed key: prefixes glued', '', 'sk-'],
  ['prefixed key: too short each', '', 'sk-a '],
  ['prefixed key: dots and stars', 'pk_', '.*'],
  ['prefixed key: the pre-check\'s "k-" glued', '', 'k-'],
  ['Google key: prefixes glued', '', 'AIza-'],
  ['Google key: too short each', '', 'AIza '],
  ['OAuth token: prefixes glued', '', 'ya29.'],
  ['AWS key id: prefixes glued', '', 'AKIA'],
  ['AWS key id: prefixes and dashes', '', 'ASIA-'],
  ['JWT: "eyJ" glued by "-"', '', 'eyJ-'],
  ['JWT: "eyJ" glued', '', 'eyJ'],
  ['JWT: "eyJ" glued by "_"', '', 'eyJ_'],
  ['JWT: a header, then a payload of "eyJ-"', 'eyJabcdefgh.', 'eyJ-'],
  ['JWT: headers only', '', 'eyJabcdefgh.'],
  ['JWT: a run with no "eyJ"', '', 'abc-'],
  ['JWT: one "eyJ", then a run with no dot', 'eyJ', 'a-'],
  ['JWT: headers glued by "-", no dot', '', '-eyJabcdefgh'],
  ['JWT: "eyJ" never at a word start', '', 'xeyJ-'],
  ['JWT: word starts far apart', '', 'eyJ-abcdefghijklmnopqrstuvwxyz-'],
  ['JWT: dots and dashes', '', 'eyJ-.'],
  ['key-id pair: no secret after the colon', '', '00000000-0000-0000-0000-000000000000:'],
  ['key-id pair: a short secret', '', '00000000-0000-0000-0000-000000000000:0'],
  ['hex: one long run', '', '0'],
  ['hex: runs of 16 cut by "-"', '', '0123456789abcdef-'],
  ['hex: runs of 31', '', '0123456789abcdef0123456789abcde '],
];

// [what it attacks, head, repeated unit], redacted with SECRETS
const HOSTILE_SECRETS: [string, string, string][] = [
  ['secret: all but its last character, repeated', '', SECRET.slice(0, -1)],
  ['secret: upper-cased, all but its last character', '', SECRET.slice(0, -1).toUpperCase()],
  ['secret: its first character, repeated', '', 's'],
  ['secret: itself, repeated in one run (each match searched past by one)', '', SECRET],
  ['secret: a JSON-escaped one, repeated in one run', '', SLASHED.replace(/\//g, '\\/')],
  ['base64: all but the last character of its form', '', B64.slice(0, -1)],
  ['base64: its form, repeated in one run', '', B64],
  ['base64: its form and padding, repeated', '', `${B64}=`],
  ['base64: a long run without it', '', 'QUJD'],
  ['base64url: a long run of its punctuation', '', '-_'],
  ['base64: forms cut by a space', '', `${B64} `],
  ['hex: all but the last digit of its form, repeated', '', HEX.slice(0, -1)],
  ['hex: upper-cased, all but the last digit', '', HEX.slice(0, -1).toUpperCase()],
  ['hex: its form, repeated in one run', '', HEX],
  ['hex: a long run without it', '', '0123456789abcdef'],
  ['JSON slashes: the escaped secret, all but its last character', '', SLASHED.replace(/\//g, '\\/').slice(0, -1)],
  ['JSON slashes: "\\/" glued', '', '\\/'],
  ['JSON slashes: base64 characters and "\\/"', '', 'QU\\/'],
  ['backslashes', '', '\\'],
  ['wraps: one base64 character a line', '', 'A\n'],
  ['wraps: one base64 character a CRLF line', '', 'A\r\n'],
  ['wraps: JSON-escaped, one character a line', '', 'A\\n'],
  ['wraps: JSON-escaped CRLF, one character a line', '', 'A\\r\\n'],
  ['wraps: "\\/" then a wrap', '', '\\/\n'],
  ['wraps: line breaks with no base64 around', '', ' \n'],
  ['wraps: one punctuation character a line', '', '.\n'],
  ['wraps: JSON-escaped, one punctuation character a line', '', '.\\n'],
  ['wraps: the secret cut by a wrap, all but its last character', '', `${SECRET.slice(0, 9)}\n${SECRET.slice(9, -1)}`],
  ['wraps: its form cut by wraps, all but its last character', '', `${wrap(B64.slice(0, -1), 3, '\n')} `],
  ['wraps: its form cut by wraps, repeated in one run', '', `${wrap(B64, 5, '\r\n')}\r\n`],
  ['wraps: all but the last character of its form, cut by JSON wraps', '', wrap(B64.slice(0, -1), 7, '\\n')],
  ['separated hex: all but the last byte of its form, repeated', '', `${HEX_SEP.slice(0, -3)}:`],
  ['separated hex: its form, repeated in one run', '', `${HEX_SEP}:`],
  ['separated hex: one byte, repeated', '', '0a:'],
  ['separated hex: long groups, each ending one chain and starting the next', '', 'dead:be:ef:01:23:45:67:89:'],
  ['separated hex: double separators', '', '0a::'],
  ['separated hex: single digits', '', '0 '],
  ['percent: "%" glued', '', '%'],
  ['percent: "%25" glued', '', '%25'],
  ['percent: its form, all but the last byte, repeated', '', PERCENT.slice(0, -3)],
  ['percent: UTF-8 lead bytes without their continuation', '', '%e2%82'],
  ['percent: "+" in a form', '', '+'],
  ['backslash: "\\u" glued', '', '\\u'],
  ['backslash: "\\x" and one digit', '', '\\x0'],
  ['HTML: "&" glued', '', '&'],
  ['HTML: "&#" and digits without ";"', '', '&#000000000'],
  ['HTML: names without ";"', '', '&amp'],
  ['straddle: an escape taking its first character, the rest escaped, repeated', '', `%4${encodeURIComponent(SLASHED)}`],
  ['straddle: all but its first character, and an escape, repeated', '', `${SLASHED.slice(1)}%2F`],
  ['straddle: all but its first character, glued', '%2F', SLASHED.slice(1)],
  ['straddle: a value ending in an escape\'s start, then escapes', '', 'pass word%41&amp;%4'],
  ['dump: offset lines of a few bytes each', '', '00000000: 736b 2d68  sk-h\n'],
  ['dump: JSON-escaped offset lines', '', '0000 73 6b  sk\\n'],
  ['dump: offsets alone', '', '00000000: \n'],
  ['dump: one line of groups that never ends', '00000000: ', '736b '],
  ['dump: lines of one byte', '', '0000: 73\n'],
  ['dump: its hex, all but its last byte, a line each', '', `0000: ${(HEX.slice(0, -2).match(/../g) ?? []).join(' ')}\n`],
  ['cut: its first characters before "...", repeated', '', `${SECRET.slice(0, 12)}...`],
  ['cut: its first characters before "…", repeated', '', `${SECRET.slice(0, 12)}\u2026`],
  ['cut: dots', '', '.'],
  ['cut: its separated hex before each "..."', '', `${HEX_SEP.slice(0, 20)}...`],
  ['cut: words of hex letters and spaces before each "..."', '', 'face bead cafe...'],
  ['cut: an unfinished escape before each "..."', '', `${SECRET.slice(0, 12)}%2...`],
  ['cut: a base64 run before each "..."', '', `${B64.slice(0, 12)}...`],
  ['cut: a long base64 run before one "..." in each unit', '', `${B64.slice(0, 12).repeat(40)}...`],
];

/** Hosts of an upstream's configured URLs, for the internal-address rule of upstream text. */
const HOSTS = new Set(['mycorp.example.com', '127.0.0.1']);

// [what it attacks, head, repeated unit, tail], redacted as upstream text (with HOSTS)
const HOSTILE_URLS: [string, string, string, string][] = [
  ['URL: "://" glued', '', '://', ''],
  ['URL: JSON-escaped ":\\/\\/" glued', '', ':\\/\\/', ''],
  ['URL: schemes glued', '', 'http://', ''],
  ['URL: public URLs glued', '', 'http://a', ''],
  ['URL: internal URLs, each replaced', '', 'http://10.0.0.1/x ', ''],
  ['URL: a scheme that never ends', '', 'a', '://x'],
  ['URL: escapes before a scheme', '', '\\', 'nhttp://10.0.0.1/'],
  ['URL: an authority that never ends', 'http://', 'a', ''],
  ['URL: an authority of dots', 'http://', 'a.', ''],
  ['URL: an authority of colons', 'http://', ':', ''],
  ['URL: an authority of trailing dots', 'http://a', '.', ''],
  ['URL: an authority of hyphens', 'http://a', '-', ''],
  ['URL: an authority of "@"', 'http://', 'a@', ''],
  ['URL: an authority of brackets', 'http://', '[', ''],
  ['URL: an authority of "[::1]"', 'http://', '[::1]', ''],
  ['URL: an authority of unbracketed IPv6 parts', 'http://', 'fd00::', ''],
  ['URL: a path that never ends', 'http://10.0.0.1/', 'a', ''],
  ['URL: a path of "\\u0026"', 'http://10.0.0.1/', '\\u0026', ''],
  ['URL: a path of parentheses', 'http://10.0.0.1/', '(', ''],
  ['URL: a path of closing brackets', 'http://10.0.0.1/', ']', ''],
  ['URL: sentence punctuation after a path', 'http://10.0.0.1/x', '.', ''],
  ['URL: a public URL whose path holds schemes', 'http://example.com/', 'http:/', ''],
  ['URL: public URLs whose authority is a host run', '', 'http://a.b:1.2.3.4:', ''],
  ['host: IPv4 addresses and ports glued', '', '10.0.0.1:', ''],
  ['host: IPv4 addresses, each replaced', '', '10.0.0.1 ', ''],
  ['host: a run of dots and letters', '', 'a.', ''],
  ['host: a run of digits and dots', '', '1.', ''],
  ['host: an internal suffix, repeated in one run', '', 'a.internal.', ''],
  ['host: colons', '', '::', ''],
  ['host: IPv6 groups glued', '', 'fd00::1:', ''],
  ['host: parts that are not IPv6 groups', '', 'ab:', ''],
  ['host: brackets', '', '[', ''],
  ['host: bracketed IPv6 loopback glued', '', '[::1]', ''],
  ['host: zones', '', 'fe80::1%', ''],
  ['host: "localhost" glued', '', 'localhost', ''],
  ['host: the configured host and a colon', '', 'mycorp.example.com:', ''],
  ['host: names under the configured host, in one run', '', 'x.mycorp.example.com.', ''],
  ['host: names under the configured host, trailing dots and ports', '', 'x.mycorp.example.com.:1 ', ''],
  ['host: a path that never ends after one', '10.0.0.1/', 'a', ''],
  ['host: JSON escapes before each', '', '\\n10.0.0.1 ', ''],
];

/** Names of an upstream's resources, for the resource-name rule of upstream text. */
const NAMES = compileNames(['myres', 'acme-video-prod', 'org-abcdef0123']);

// [what it attacks, head, repeated unit], redacted as upstream text (with HOSTS and NAMES)
const HOSTILE_NAMES: [string, string, string][] = [
  ['name: glued to itself', '', 'myres'],
  ['name: glued by "-"', '', 'myres-'],
  ['name: each a token', '', 'myres '],
  ['name: all but its last character, glued by "-"', '', 'acme-video-pro-'],
  ['name: JSON escapes before each', '', '\\nmyres'],
  ['name: percent-encoded characters before each', '', '%2Fmyres'],
  ['name: "\\u" escapes before each', '', '\\u0027myres'],
];

describe('redact: time linear in the text', () => {
  it.each(HOSTILE)('%s', (_what, head, unit) => checkLinear((n) => build(head, unit, n), (text) => void redact(text)));
  it.each(HOSTILE_SECRETS)('%s', (_what, head, unit) => checkLinear((n) => build(head, unit, n), (text) => void redact(text, SECRETS)));
  it.each(HOSTILE_URLS)('%s', (_what, head, unit, tail) =>
    checkLinear((n) => build(head, unit, n - tail.length) + tail, (text) => void redact(text, SECRETS, HOSTS)),
  );
  it.each(HOSTILE_NAMES)('%s', (_what, head, unit) => checkLinear((n) => build(head, unit, n), (text) => void redact(text, SECRETS, HOSTS, NAMES)));
  it.each(['eyJ', 'eyJ-', 'eyj_', 'key', 'sk', '0'])('the pre-check, on a run of %j', (unit) => checkLinear((n) => build('', unit, n), (text) => void mayHoldShape(text)));

  it('still redacts what the hostile runs hide', () => {
    expect(redact(`${build('', 'a.', SMALL)} http://10.0.3.4/x ${build('', '://', SMALL)} mycorp.example.com`, undefined, HOSTS)).not.toMatch(/10\.0\.3\.4|mycorp/);
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl';
    expect(redact(`${build('', 'eyJ-', SMALL)} ${jwt}`)).not.toContain('eyJzdWIiOiIxIn0');
    expect(redact(`${build('', 'eyJ-', SMALL)}x-${jwt}`)).not.toContain('eyJzdWIiOiIxIn0');
    const pem = '-----BEGIN PRIVATE KEY-----\nMIIEsecretbody\n-----END PRIVATE KEY-----';
    expect(redact(`${build('', '-----BEGIN PRIVATE KEY-----\n', SMALL)}${pem}`)).not.toContain('MIIEsecretbody');
    expect(redact(`${build('', 'sk-a ', SMALL)} ${SECRET.toUpperCase()} ${B64}`, SECRETS)).not.toMatch(/SK-HOSTILE|c2staG9zdGlsZS0w/);
    expect(redact(`${build('', HEX.slice(0, -1), SMALL)} ${HEX.toUpperCase()} ${build('', 'A\n', SMALL)}${wrap(B64, 5, '\n')}`, SECRETS)).not.toMatch(/736B2D686F|c2st/);
    expect(redact(`${build('', '0a:', SMALL)} ${HEX_SEP} ${build('', '%25', SMALL)} ${PERCENT} ${build('', '&#0', SMALL)} ${encodeURIComponent(SLASHED)}`, SECRETS)).toMatch(
      /^[0a:]+ \[redacted\] [%25]+ \[redacted\] [&#0]+ \[redacted\]$/,
    );
  });
});
