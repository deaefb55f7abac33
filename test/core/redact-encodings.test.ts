import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileSecrets, redact, redactJson, UpstreamRedactor } from '../../src/core/redact.js';

/**
 * Configured credentials in the other spellings upstreams and the proxies in front of them echo
 * them in: hex (a header dump), JSON with "/" escaped as "\/" (some encoders do it always), and
 * base64 cut into lines (MIME at 76 columns, PEM at 64; raw or JSON-escaped line breaks).
 */
const SECRET = 'sk-hostile-0123456789abcdef';
const SLASHED = 'aws/secret/Key+value/0123456789';
// Bytes that base64 writes with "/" and "+".
const BINARY = 'pw\u00ff\u00fe>>>??~~\u00fb\u00ef';
const LONG = `${'long-credential-'.repeat(8)}end`;
const secrets = compileSecrets([SECRET, SLASHED, BINARY, LONG, 'Zq8Wm3Rt']);

const hex = (s: string) => Buffer.from(s, 'utf8').toString('hex');
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const b64url = (s: string) => Buffer.from(s, 'utf8').toString('base64url');
const jsonSlashes = (s: string) => s.replace(/\//g, '\\/');
/** `s` cut into lines of `width` characters, joined by `eol`. */
const wrap = (s: string, width: number, eol: string) => (s.match(new RegExp(`.{1,${width}}`, 'g')) ?? []).join(eol);

describe('redact: configured credentials hex-encoded', () => {
  it('removes the hex of a credential, lower- and upper-case, wherever it starts', () => {
    for (const value of [SECRET, SLASHED, BINARY]) {
      for (const spelt of [hex(value), hex(value).toUpperCase()]) {
        for (let at = 0; at < 40; at++) {
          const text = `${'x'.repeat(at)} header dump ${spelt} end`;
          expect(redact(text, secrets), text).toBe(`${'x'.repeat(at)} header dump [redacted] end`);
        }
      }
    }
  });

  it('removes it inside a longer hex run (an encoded header), keeping the rest', () => {
    const text = `dump=${hex('Authorization: Bearer ')}${hex(SECRET)}0d0a`;
    const out = redact(text, secrets);
    expect(out).not.toContain(hex(SECRET));
    expect(out.toLowerCase()).not.toContain(hex(SECRET.slice(0, 12)));
  });

  it('leaves other hex alone', () => {
    const text = `sha ${hex('sk-hostile-987654321')} and 0123456789abcdef0123`;
    expect(redact(text, secrets)).toBe(text);
  });
});

describe('redact: configured credentials with "/" JSON-escaped as "\\/"', () => {
  it('removes the raw credential spelt with "\\/", in any case', () => {
    const body = JSON.stringify({ error: { message: `bad key ${SLASHED}` } }).replace(/\//g, '\\/');
    expect(body).toContain('aws\\/secret\\/');
    const out = redact(body, secrets);
    expect(out).toBe('{"error":{"message":"bad key [redacted]"}}');
    expect(redact(jsonSlashes(SLASHED).toUpperCase(), secrets)).toBe('[redacted]');
  });

  it('removes the base64 of a credential spelt with "\\/", the whole run', () => {
    let seen = 0;
    for (const value of [BINARY, SLASHED, SECRET])
      for (let before = 0; before < 6; before++) {
        const encoded = b64(`${'user:'.slice(0, before)}${value}`);
        if (!encoded.includes('/')) continue;
        seen++;
        expect(redact(`{"authorization":"Basic ${jsonSlashes(encoded)}"}`, secrets), encoded).toBe('{"authorization":"Basic [redacted]"}');
      }
    expect(seen).toBeGreaterThan(3);
  });
});

describe('redact: configured credentials cut by a line wrap', () => {
  it.each([
    ['a raw LF', '\n'],
    ['a raw CRLF', '\r\n'],
    ['a JSON-escaped "\\n"', '\\n'],
    ['a JSON-escaped "\\r\\n"', '\\r\\n'],
  ])('removes one cut by %s at any place', (_what, eol) => {
    for (const value of [SECRET, SLASHED, BINARY, LONG, 'Zq8Wm3Rt'])
      for (let cut = 1; cut < value.length; cut++) {
        const text = `bad key ${value.slice(0, cut)}${eol}${value.slice(cut)} rejected`;
        expect(redact(text, secrets), text).toBe('bad key [redacted] rejected');
      }
  });

  it('removes one wrapped in an upstream\'s JSON error, also in any case', () => {
    const message = `Invalid key:\n${LONG.slice(0, 76)}\n${LONG.slice(76)}\n(check the console)`;
    expect(redact(JSON.stringify({ error: { message } }), secrets)).toBe('{"error":{"message":"Invalid key:\\n[redacted]\\n(check the console)"}}');
    expect(redact(JSON.stringify({ error: { message: message.toUpperCase() } }), secrets)).not.toContain('LONG-CREDENTIAL');
  });
});

describe('redact: configured credentials base64-encoded across line wraps', () => {
  const longer = `client:${LONG}:${SECRET}`;

  it.each([
    ['MIME, 76 columns, CRLF', 76, '\r\n'],
    ['MIME, 76 columns, LF', 76, '\n'],
    ['PEM, 64 columns', 64, '\n'],
    ['JSON-escaped MIME', 76, '\\r\\n'],
    ['JSON-escaped PEM', 64, '\\n'],
  ])('%s: removes the whole wrapped run, wherever the wraps fall', (_what, width, eol) => {
    for (let before = 0; before < 80; before += 7) {
      const plain = `${'x'.repeat(before)}${longer}`;
      for (const encoded of [b64(plain), b64url(plain)]) {
        const wrapped = wrap(encoded, width, eol);
        expect(wrapped).toContain(eol);
        expect(redact(`body: ${wrapped} (end)`, secrets), wrapped).toBe('body: [redacted] (end)');
      }
    }
  });

  it('catches a short credential cut by one wrap at any place', () => {
    const encoded = b64(SECRET);
    for (let cut = 1; cut < encoded.length; cut++) {
      const text = `echo ${encoded.slice(0, cut)}\n${encoded.slice(cut)}\n(next line)`;
      expect(redact(text, secrets), text).toBe('echo [redacted]\n(next line)');
    }
  });

  it('leaves other wrapped text and other base64 alone', () => {
    const other = wrap(b64(`another-credential-entirely-${'z'.repeat(80)}`), 76, '\r\n');
    for (const text of [`line one\nline two\r\nline three`, `cert:\n${other}\n`, 'a\\nb\\/c']) expect(redact(text, secrets)).toBe(text);
  });

  it('redacts vendor_data strings and the upstream redactor the same way', () => {
    const r = new UpstreamRedactor([SECRET]);
    const encoded = b64(`user:${SECRET}`);
    const wrapped = `${encoded.slice(0, 10)}\n${encoded.slice(10)}`;
    expect(r.json({ dump: hex(SECRET).toUpperCase(), auth: wrapped })).toEqual({ dump: '[redacted]', auth: '[redacted]' });
    expect(r.ownCredentials(`x ${hex(SECRET)} ${wrapped}`)).toBe('x [redacted] [redacted]');
    expect(redactJson({ k: jsonSlashes(SLASHED) }, secrets)).toEqual({ k: '[redacted]' });
  });

  it('never lets a credential through in any of these spellings, whatever surrounds it', () => {
    const around = fc.string({ maxLength: 6 });
    // Raw line breaks, or a JSON string's: escaped, and its "/" as "\/".
    const eol = fc.constantFrom('\n', '\r\n', '\\n', '\\r\\n');
    fc.assert(
      fc.property(around, around, fc.constantFrom(SECRET, SLASHED, BINARY, LONG), fc.integer({ min: 4, max: 80 }), eol, fc.boolean(), (before, after, value, width, br, url) => {
        const wrapped = wrap(url ? b64url(`${before}${value}`) : b64(`${before}${value}`), width, br);
        const spellings = [br.startsWith('\\') ? jsonSlashes(wrapped) : wrapped, hex(value), hex(value).toUpperCase(), jsonSlashes(value)];
        for (const spelt of spellings) {
          const out = redact(`${before}${spelt}${after}`, secrets);
          expect(out).not.toContain(spelt);
          expect(out.toLowerCase()).not.toContain(value.toLowerCase());
        }
      }),
      { numRuns: 3000 },
    );
  });
});
