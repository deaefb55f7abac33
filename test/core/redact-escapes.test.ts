import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileSecrets, redact, UpstreamRedactor } from '../../src/core/redact.js';
import { escapesIn } from '../../src/core/redact-escapes.js';
import { createLogger } from '../../src/ops/logger.js';

/**
 * Configured credentials in the spellings of a header dump with separators (`de:ad:be:ef`), of a URL
 * (percent-encoded whole, or only its special characters), of a JSON encoder that escapes characters
 * as `\uXXXX` (Go's escapes `<`, `>` and `&`), and of an HTML error page (`&#x2F;`, `&amp;`).
 */
const SECRET = 'sk-hostile-0123456789abcdef';
const AWS = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY=';
const ODD = 'pa ss&<w>"or\'d\u00e9\u{1f511}';
const secrets = compileSecrets([SECRET, AWS, ODD]);

const hexBytes = (s: string) => [...Buffer.from(s, 'utf8')].map((b) => b.toString(16).padStart(2, '0'));
/** Every byte as %XX. */
const percentAll = (s: string) => hexBytes(s).map((h) => `%${h}`).join('');
/** Only what a URL must encode, as encodeURIComponent does. */
const percentSpecial = encodeURIComponent;
/** Every UTF-16 unit as \uXXXX. */
const jsonAll = (s: string) => Array.from({ length: s.length }, (_, i) => `\\u${s.charCodeAt(i).toString(16).padStart(4, '0')}`).join('');
const htmlSpecial = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;').replace(/\//g, '&#x2F;');

describe('redact: configured credentials as hex with a separator between bytes', () => {
  it.each([':', '-', ' '])('removes %j-separated hex, in either case, wherever it starts', (sep) => {
    for (const value of [SECRET, AWS, ODD]) {
      for (const spelt of [hexBytes(value).join(sep), hexBytes(value).join(sep).toUpperCase()]) {
        for (const before of ['', 'x', 'dump ', 'ab:', '0']) {
          const out = redact(`${before}${spelt} end`, secrets);
          expect(out, spelt).toContain('[redacted]');
          expect(out.toLowerCase(), spelt).not.toContain(hexBytes(value).slice(0, 6).join(sep));
        }
      }
    }
  });

  it('leaves other separated hex alone: a MAC address, a fingerprint of other bytes, a UUID, a time', () => {
    for (const text of [
      'mac 00:1a:2b:3c:4d:5e up',
      `fingerprint ${hexBytes('another-value-entirely').join(':')}`,
      'request 3f2a1b4c-0000-4111-8222-123456789abc at 2026-11-23 12:30:45',
    ])
      expect(redact(text, secrets)).toBe(text);
  });
});

describe('redact: configured credentials percent-encoded', () => {
  it('removes every byte percent-encoded, in either case, once or twice over', () => {
    for (const value of [SECRET, AWS, ODD]) {
      const once = percentAll(value);
      for (const spelt of [once, once.toUpperCase(), once.replace(/%/g, '%25')]) {
        const out = redact(`GET /x?k=${spelt}&y=1`, secrets);
        expect(out, spelt).toBe('GET /x?k=[redacted]&y=1');
      }
    }
  });

  it('removes a credential whose special characters alone are encoded ("/" %2F, "+" %2B, "=" %3D)', () => {
    expect(percentSpecial(AWS)).toContain('%2F');
    for (const spelt of [percentSpecial(AWS), percentSpecial(AWS).toLowerCase().replace(/%2f/g, '%2f'), percentSpecial(ODD), ODD.replace(/ /g, '+')])
      expect(redact(`token=${spelt} rejected`, secrets), spelt).toBe('token=[redacted] rejected');
    // Some characters encoded, some not.
    expect(redact(`${AWS.replace('/', '%2f')}`, secrets)).toBe('[redacted]');
  });

  it('removes the base64 run holding one, its "+", "/" and "=" percent-encoded', () => {
    let seen = 0;
    for (const user of ['', 'u:', 'us:', 'usr:']) {
      const encoded = encodeURIComponent(Buffer.from(`${user}${ODD}`, 'utf8').toString('base64'));
      if (!/%2[BF]/.test(encoded)) continue;
      seen++;
      expect(redact(`auth=Basic%20${encoded}&next=1`, secrets), encoded).toBe('auth=Basic%20[redacted]&next=1');
    }
    expect(seen).toBeGreaterThan(0);
  });

  it('leaves other percent-encoded text alone', () => {
    for (const text of ['GET /v1/models/a%2Fb?x=%20y', percentAll('another-value-entirely'), '100% sure, 50%+ done', 'a+b+c'])
      expect(redact(text, secrets)).toBe(text);
  });
});

describe('redact: configured credentials JSON- and HTML-escaped character by character', () => {
  it('removes \\uXXXX escapes of some or all characters, in either case', () => {
    const goStyle = JSON.stringify(ODD).slice(1, -1).replace(/&/g, '\\u0026').replace(/</g, '\\u003c').replace(/>/g, '\\u003e');
    for (const spelt of [jsonAll(SECRET), jsonAll(ODD).toUpperCase().replace(/\\U/g, '\\u'), goStyle])
      expect(redact(`{"message":"bad ${spelt}"}`, secrets), spelt).toBe('{"message":"bad [redacted]"}');
  });

  it('removes HTML character references, named and numeric', () => {
    const numeric = [...AWS].map((c) => `&#${c.codePointAt(0)};`).join('');
    for (const spelt of [htmlSpecial(ODD), htmlSpecial(AWS), numeric]) expect(redact(`<p>${spelt}</p>`, secrets), spelt).toBe('<p>[redacted]</p>');
  });

  it('decodes nothing where no escape is of a character some credential holds (non-ASCII chat text as \\uXXXX)', () => {
    const keyChars = (c: string) => /^[a-z0-9-]$/i.test(c);
    expect(escapesIn('{"content":"caf\\u00e9 \\u4f60\\u597d &amp; 100%, &#x2F; %2F \\x2f"}', false, keyChars)).toBeUndefined();
    expect(escapesIn('k=%73k and %2573 and \\u0073 and &#115; and a+b', true, keyChars)).toEqual(['url', 'url-twice', 'form', 'backslash', 'html']);
  });

  it('leaves other escaped text alone', () => {
    for (const text of ['{"m":"caf\\u00e9 \\u0026 more"}', '<p>a &amp; b &#x2F; c</p>']) expect(redact(text, secrets)).toBe(text);
  });
});

describe('redact: never a configured credential in any of these spellings', () => {
  const SPELLINGS: [string, (s: string) => string][] = [
    ['hex with ":"', (s) => hexBytes(s).join(':')],
    ['hex with "-", upper-case', (s) => hexBytes(s).join('-').toUpperCase()],
    ['hex with " "', (s) => hexBytes(s).join(' ')],
    ['percent-encoded, every byte', percentAll],
    ['percent-encoded, upper-case', (s) => percentAll(s).toUpperCase()],
    ['percent-encoded twice', (s) => percentAll(s).replace(/%/g, '%25')],
    ['percent-encoded, special characters', percentSpecial],
    ['form-encoded', (s) => encodeURIComponent(s).replace(/%20/g, '+')],
    ['\\u escapes', jsonAll],
    ['HTML references', htmlSpecial],
    ['base64, percent-encoded', (s) => encodeURIComponent(Buffer.from(s, 'utf8').toString('base64'))],
  ];
  // Random credentials of the shapes upstreams use: printable ASCII, base64 with "/+=", some non-ASCII.
  const credential = fc.oneof(
    fc.string({ minLength: 8, maxLength: 48, unit: fc.constantFrom(...'abcdefXYZ0189-_./+=:~ &%<>"\'') }),
    fc.base64String({ minLength: 12, maxLength: 60 }),
    fc.string({ minLength: 8, maxLength: 24, unit: 'grapheme' }),
  );
  // Text around it: anything, or what sits next to an encoded value (hex digits, "%", separators).
  const around = fc.oneof(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8, unit: fc.constantFrom(...'0a:- %25\\u&#;+') }));

  // The text before may end with an escape the value's first characters complete ("%" then "0A..."), and
  // the text after may complete one the value's last characters begin (redact-straddle.ts).
  it('removes each spelling, whatever surrounds it', () => {
    fc.assert(
      fc.property(credential, around, around, fc.constantFrom(...SPELLINGS), (value, before, after, [, spell]) => {
        const s = compileSecrets([value]);
        const spelt = spell(value);
        const out = redact(`${before}${spelt}${after}`, s);
        expect(out).not.toContain(spelt);
        expect(out).toContain('[redacted]');
      }),
      { numRuns: 4000 },
    );
  });

  it('leaves text that holds none of them unchanged', () => {
    fc.assert(
      fc.property(credential, fc.constantFrom(...SPELLINGS), fc.string({ maxLength: 60 }), (value, [, spell], other) => {
        // Unrelated text, also spelt the same way: neither holds the credential.
        fc.pre(other.length > 0 && !other.toLowerCase().includes(value.toLowerCase()));
        const s = compileSecrets([value]);
        for (const text of [`note\0${other}`, `note\0${spell(other)}`]) {
          // Not by chance the credential as it is, nor a shape redacted whatever the configuration.
          fc.pre(!text.toLowerCase().includes(value.toLowerCase()) && !redact(text).includes('[redacted]'));
          expect(redact(text, s)).toBe(text);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe("redact: an escape that takes a credential's first or last characters", () => {
  // An AWS-style secret that starts with hex digits and holds "/" and "+", which encoders escape.
  const HEXY = '4bJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
  const ENDS = 'p4ss/w0rd-2024%';
  /** Its base64 text starts with a hex digit ("ajBo...") and holds a "/" and a "+". */
  const B64ED = 'j0hn.d0e?pass>>word~';
  const s = compileSecrets([HEXY, ENDS, B64ED]);
  const jsonSpecial = (v: string) => v.replace(/[/+]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`);
  const cSpecial = (v: string) => v.replace(/[/+]/g, (c) => `\\x${c.charCodeAt(0).toString(16)}`);

  it.each([
    ['"%" before it, its "/" percent-encoded', `100%${percentSpecial(HEXY)}`, '100%[redacted]'],
    ['"\\u00" before it, its "/" as \\u002f', `{"k":"\\u00${jsonSpecial(HEXY)}"}`, '{"k":"\\u00[redacted]"}'],
    ['"\\x4" before it, its "/" as \\x2f', `k=\\x4${cSpecial(HEXY)}`, 'k=\\x4[redacted]'],
    ['"%" after a value ending in "%", its "/" encoded', `p=${ENDS.replace('/', '%2F')}41 next`, 'p=[redacted]41 next'],
    ['its base64 ("ajBo..."), "%0" before it, "/" and "+" encoded', `auth=%0${encodeURIComponent(Buffer.from(B64ED).toString('base64'))}&x=1`, 'auth=%0[redacted]&x=1'],
  ])('removes it with %s', (_what, text, expected) => {
    expect(redact(text, s)).toBe(expected);
  });

  it('leaves an escape that ends with other characters, and what is not the credential', () => {
    // "%3b" ends with "3b", not the "4b" the secret starts with, and "&#41;" does not start with the "%" it
    // ends with: these texts do not hold it.
    for (const text of [`x%3b${percentSpecial(HEXY.slice(2))}`, `x%4${percentSpecial(HEXY.slice(1, 12))} end`, `p=${ENDS.slice(0, -1).replace('/', '%2F')}&#41;`])
      expect(redact(text, s)).toBe(text);
  });
});

describe('these spellings everywhere the redaction applies', () => {
  it('are removed by the upstream redactor and from every log line', () => {
    const r = new UpstreamRedactor([SECRET]);
    expect(r.text(`dump ${hexBytes(SECRET).join(':')}`)).toBe('dump [redacted]');
    expect(r.ownCredentials(`say ${percentAll(SECRET)}`)).toBe('say [redacted]');
    const lines: string[] = [];
    const log = createLogger('info', { secrets: [AWS], sink: { write: (l: string) => void lines.push(l) } });
    log.warn(`upstream said: signature for ${encodeURIComponent(AWS)} and ${hexBytes(AWS).join('-').toUpperCase()} mismatched`);
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(encodeURIComponent(AWS));
    expect(lines[0]!.toLowerCase()).not.toContain(hexBytes(AWS).slice(0, 8).join('-'));
    expect(JSON.parse(lines[0]!).msg).toBe('upstream said: signature for [redacted] and [redacted] mismatched');
  });
});
