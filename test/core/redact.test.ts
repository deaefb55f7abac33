import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyShape, configuredSecrets, redact, redactJson, redactorFor, UpstreamRedactor, compileSecrets, SHAPES, mayHoldShape } from '../../src/core/redact.js';
import { MIN_NAME_LENGTH } from '../../src/core/redact-names.js';
import { createLogger } from '../../src/ops/logger.js';

const PEM = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nabcdefghijklmnopqrstuvwxyz0123456789ABCD\n-----END PRIVATE KEY-----\n';

describe('redact: credential shapes', () => {
  it.each([
    ['Authorization: Bearer abc.def-ghi_jkl', 'abc.def-ghi_jkl'],
    ['authorization: Key 0a1b2c3d-0000-4111-8222-123456789abc:0123456789abcdef0123', '0123456789abcdef0123'],
    ['key sk-live-abcdef123456 rejected', 'abcdef123456'],
    ['url https://x/y?api-key=s3cr3t&x=1', 's3cr3t'],
    ['https://storage/v?X-Amz-Signature=deadbeef99&X-Amz-Credential=AKIAxyz', 'deadbeef99'],
    ['AWS4-HMAC-SHA256 Credential=AKIAABCDEFGHIJKLMNOP/20260101/us-east-1/bedrock/aws4_request, Signature=f00ba4', 'f00ba4'],
    ['id AKIAABCDEFGHIJKLMNOP used', 'AKIAABCDEFGHIJKLMNOP'],
    ['google AIzaSyA-1234567890abcdefghijklmnop', 'AIzaSyA-1234567890abcdefghijklmnop'],
    ['token ya29.a0AfH6SMBx-yz', 'ya29.a0AfH6SMBx-yz'],
    ['jwt eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0.c2lnbmF0dXJl', 'eyJpc3MiOiJ4In0'],
    ['Incorrect API key provided: sk-proj-****abcd.', '****abcd'],
    ['azure 0123456789abcdef0123456789abcdef', '0123456789abcdef0123456789abcdef'],
    [`key ${PEM} leaked`, 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7'],
    [`json ${JSON.stringify(PEM)}`, 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7'],
  ])('removes the credential from %j', (text, secret) => {
    const out = redact(text);
    expect(out).not.toContain(secret);
    expect(out).toContain('[redacted]');
  });

  it('keeps what is not a credential, labels and punctuation included', () => {
    expect(redact('Access denied for key 0123456789abcdef0123456789abcdef.')).toBe('Access denied for key [redacted].');
    expect(redact('url https://x/y?api-key=s3cr3t&x=1')).toBe('url https://x/y?api-key=[redacted]&x=1');
    expect(redact('The duration 12 is not supported for task 3f2a1b4c-0000-4111-8222-123456789abc.')).toBe(
      'The duration 12 is not supported for task 3f2a1b4c-0000-4111-8222-123456789abc.',
    );
    expect(redact('Bearer tokens are required.')).toBe('Bearer tokens are required.');
  });

  it('is idempotent', () => {
    const once = redact('Bearer abcdefgh7 key=xyz123 sk-abcdefghij');
    expect(redact(once)).toBe(once);
  });
});

describe('redact: configured secrets', () => {
  it('removes exact values of any shape, raw and JSON-escaped, and each long line of a multi-line one', () => {
    const weird = 'plain-looking"value with spaces';
    const secrets = compileSecrets([weird, 'CANARY0123456789', PEM, 'short']);
    expect(redact(`a CANARY0123456789 b`, secrets)).toBe('a [redacted] b');
    expect(redact(JSON.stringify({ m: weird }), secrets)).not.toContain('plain-looking');
    expect(redact('line MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7 only', secrets)).not.toContain('MIIEvQIBADAN');
    // Values too short to be credentials are left alone: hiding every "short" hides nothing.
    expect(redact('a short note', secrets)).toBe('a short note');
  });

  it('counts the short last line of a PEM body, as base64, while short lines of other text do not', () => {
    const pem = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7abcdefghijkl\nq8ZrT0w1Xy==\n-----END PRIVATE KEY-----\n';
    expect(redact('tail q8ZrT0w1Xy== of the key', compileSecrets([pem]))).toBe('tail [redacted] of the key');
    expect(redact('a short line here', compileSecrets(['first line of a long multi-line value\nshort line']))).toBe('a short line here');
  });

  it('collects every credential of an upstream config: api key, token, AWS secrets, service-account fields', () => {
    const found = configuredSecrets({
      apiKey: 'api-key-value-1',
      options: {
        project: 'my-project',
        location: 'us-central1',
        key_file: '/etc/keys/sa.json',
        api_version: '2025-04-01-preview',
        access_token: 'access-token-value',
        secret_access_key: 'aws-secret-value',
        session_token: 'aws-session-value',
        max_batch_tokens: 1000,
        service_account: { client_email: 'x@y.iam', private_key: PEM, token_uri: 'https://oauth2/token' },
        nested: { password: 'nested-password' },
      },
    });
    expect(found).toEqual(
      expect.arrayContaining(['api-key-value-1', 'access-token-value', 'aws-secret-value', 'aws-session-value', PEM, 'x@y.iam', 'nested-password']),
    );
    expect(found).not.toContain('my-project');
    expect(found).not.toContain('/etc/keys/sa.json');
    expect(found).not.toContain('https://oauth2/token');
  });

  it("leaves a service account's public, shared fields out: its type, URLs and universe domain are the same for every account", () => {
    const file = { type: 'service_account', client_email: 'svc@proj.iam', private_key: PEM, universe_domain: 'googleapis.com', token_uri: 'https://oauth2.googleapis.com/token' };
    for (const service_account of [file, JSON.stringify(file)]) {
      const found = configuredSecrets({ options: { service_account } });
      expect(found).toEqual(expect.arrayContaining([PEM, 'svc@proj.iam']));
      expect(found).not.toContain('googleapis.com');
      expect(found).not.toContain('service_account');
    }
  });

  it('reads a service account given as JSON text', () => {
    const found = configuredSecrets({ options: { service_account: JSON.stringify({ private_key: PEM, client_email: 'a@b.iam' }) } });
    expect(found).toContain(PEM);
    expect(found).toContain('a@b.iam');
  });

  it('redacts every string of a JSON value, keys included, without touching numbers', () => {
    const r = new UpstreamRedactor(['CANARY0123456789']);
    expect(r.json({ task_id: 't-1', n: 3, list: ['CANARY0123456789'], ['CANARY0123456789']: { x: 'Bearer abc123defgh' } })).toEqual({
      task_id: 't-1',
      n: 3,
      list: ['[redacted]'],
      ['[redacted]']: { x: 'Bearer [redacted]' },
    });
    expect(redactJson('x')).toBe('x');
  });

  it('removes credentials that overlap or hold one another, whole, in every spelling', () => {
    // An access key id and a secret glued where one ends with the other's first characters, a value
    // and a longer one that starts with it, and a value inside another.
    const secrets = compileSecrets(['AKIAOVERLAP1234', '1234SecretTail5678', 'Zq8Wm3Rt', 'Zq8Wm3Rt-longer-value', 'inner-Pv7Lx2Nc-outer', 'Pv7Lx2Nc']);
    const hex = (v: string) => Buffer.from(v).toString('hex');
    expect(redact('ids AKIAOVERLAP1234SecretTail5678 end', secrets)).toBe('ids [redacted] end');
    expect(redact(`dump ${hex('AKIAOVERLAP1234SecretTail5678')} end`, secrets)).toBe('dump [redacted] end');
    expect(redact(`q=${encodeURIComponent('AKIAOVERLAP1234SecretTail5678/x')}`, secrets)).toBe('q=[redacted]%2Fx');
    expect(redact('a Zq8Wm3Rt-longer-value and Zq8Wm3Rt and Zq8Wm3Rt-longer', secrets)).toBe('a [redacted] and [redacted] and [redacted]-longer');
    expect(redact('k inner-Pv7Lx2Nc-outer', secrets)).toBe('k [redacted]');
  });

  it('learns minted credentials and keeps only the last few', () => {
    const up = { options: {} };
    const r = redactorFor(up);
    expect(redactorFor(up)).toBe(r);
    r.learn('minted-token-number-0');
    expect(r.text('echo minted-token-number-0')).toBe('echo [redacted]');
    for (let i = 1; i <= 8; i++) r.learn(`minted-token-number-${i}`);
    expect(r.text('echo minted-token-number-8')).toBe('echo [redacted]');
    expect(r.text('echo minted-token-number-0')).toBe('echo minted-token-number-0');
  });
});

describe('the logger', () => {
  it('passes every line through the redaction with the configured secrets', () => {
    const lines: string[] = [];
    const log = createLogger('info', { secrets: ['CANARY0123456789'], sink: { write: (l: string) => void lines.push(l) } });
    log.warn('chat upstream failed: client 400: echo CANARY0123456789');
    log.error({ err: new Error('Bearer abcdefghij42 rejected') }, 'request failed');
    log.info({ upstream: 'x', reason: 'private key CANARY0123456789' }, 'attempt failed');
    expect(lines).toHaveLength(3);
    for (const l of lines) {
      expect(l).not.toContain('CANARY0123456789');
      expect(l).not.toContain('abcdefghij');
      expect(() => JSON.parse(l)).not.toThrow();
    }
  });
});

describe('redact: the one-pass pre-check', () => {
  // Every shape applied unconditionally: what redact() did before it skipped text with nothing to hide.
  const everyShape = (text: string): string => (text.length < MIN_NAME_LENGTH ? text : SHAPES.reduce(applyShape, text));
  const pieces = ['Bearer ', 'BEARER ', 'Key ', 'Basic ', 'Token ', 'sk-', 'rk_', 'AIza', 'ya29.', 'AKIA', 'ASIA', 'eyJ', '=', '&', ' ', '.', '-----BEGIN PRIVATE KEY-----', '-----END PRIVATE KEY-----', 'api key provided: ', 'Signature=', 'abcdef0123456789', 'ABCDEF', 'xyz', '0', ':', '"', '/v1/embeddings',
    // Pieces that need a neighbour to be a shape (whitespace, a dot, a word start), with and without it.
    'key', 'KEY', 'token', 'Token', '\t', '\n', '\u00a0', '\u2028', '\u3000', 'eyJhbGciOi', 'eyJ', 'abcdefgh', '-', '_', 'sk', 'ak', 'xsk-', '-pk_', 'K', '\u212a', '\u0130', 'api key', 'provided',
    // A JWT glued to the run before it, or one "eyJ" among many in a run; private-key blocks of other kinds.
    '-eyJ', 'eyJ-', '_eyJ', 'xeyJ', 'eyJabcdef.', '-----BEGIN RSA PRIVATE KEY-----', '-----END RSA PRIVATE KEY-----', '\\n'];

  it('never skips text that a credential shape would change', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constantFrom(...pieces), fc.string({ maxLength: 6 })), { maxLength: 30 }), (parts) => {
        const text = parts.join('');
        expect(redact(text)).toBe(everyShape(text));
      }),
      { numRuns: 20000 },
    );
  });

  it('finds a 32-hex-digit key wherever it starts in the text', () => {
    const hex = '0123456789abcdef0123456789ABCDEF';
    for (let at = 0; at < 40; at++) {
      const text = `${'x'.repeat(at)} ${hex} tail`;
      expect(redact(text)).toBe(everyShape(text));
      expect(redact(text)).not.toContain(hex);
    }
  });

  it('does not take a sealed id\'s chance letters for a credential, nor miss one at a word start', () => {
    // Each holds a piece of a shape without what the shape needs beside it: no shape applies.
    const chance = ['/v1/videos/AQFxkeyZ9', '/v1/videos/AQFeyJabcdefghij_-x', '/v1/videos/AQFxsk-abcdefgh', '/v1/videos/QQ9pk_abcdefgh', 'a Keyless token-free line', 'eyJabc.def'];
    for (const text of chance) {
      expect(everyShape(text)).toBe(text);
      expect(mayHoldShape(text), text).toBe(false);
    }
    // And with it, each is found.
    const shapes = ['/v1/videos/AQ-sk-abcdefgh', 'sk_abcdefgh', 'x \u212ask-abcdefgh', 'Key\u3000abc123def', 'Token\tab1-cdef', 'eyJabcdefgh.ij.kl', 'api key provided: sk'];
    for (const text of shapes) {
      expect(everyShape(text), text).not.toBe(text);
      expect(mayHoldShape(text), text).toBe(true);
    }
  });

  it('leaves an access log line as it is', () => {
    const line = '{"level":30,"time":1763835000000,"pid":1,"hostname":"h","request_id":"6f1c2a8e-3b1d-4c55-9a0e-2f7f1b9c1d2e","method":"POST","path":"/v1/embeddings","status":200,"ms":0.8,"msg":"request completed"}';
    expect(redact(line)).toBe(line);
  });
});

describe('redact: JWTs and private-key blocks', () => {
  const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c';
  const shape = (word: string) => SHAPES.find(([re]) => re.source.includes(word))!;
  // The earlier spellings of these two shapes: quadratic on long hostile runs, but on short texts
  // they are quick and state what the shapes must still do.
  const before = {
    jwt: /\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g,
    pem: /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
  };

  it.each([
    [`${JWT}`, '[redacted]'],
    [`jwt ${JWT} end`, 'jwt [redacted] end'],
    [`{"id_token":"${JWT}"}`, '{"id_token":"[redacted]"}'],
    [`assertion:${JWT}`, 'assertion:[redacted]'],
    [`a=${JWT}&b=1`, 'a=[redacted]&b=1'],
    [`'${JWT}'`, "'[redacted]'"],
    [`/v1/x/${JWT}`, '/v1/x/[redacted]'],
    // Glued to a run of base64url characters by a "-": the run before it is kept.
    [`session-${JWT}`, 'session-[redacted]'],
    [`a-b_c-${JWT}.tail`, 'a-b_c-[redacted].tail'],
    // The run's first "eyJ" starts the token: the rest of the run is its header.
    [`eyJ-eyJ-${JWT}`, '[redacted]'],
    // Two in a row, and one after a run that holds a failed start.
    [`${JWT} ${JWT}`, '[redacted] [redacted]'],
    [`eyJshort.x ${JWT}`, 'eyJshort.x [redacted]'],
  ])('redacts the JWT in %j', (text, expected) => {
    expect(redact(text)).toBe(expected);
  });

  it('leaves what only looks like the start of a JWT', () => {
    for (const text of ['xeyJabcdefgh.ij.kl', 'eyJabc.def.ghi', 'eyJabcdefgh.ij', 'eyJ-eyJ-eyJ-eyJ', '_eyJabcdefgh.ij.kl']) expect(redact(text)).toBe(text);
  });

  it('redacts every private-key block, a BEGIN without an END before another block included', () => {
    const block = (kind: string, body: string) => `-----BEGIN ${kind}PRIVATE KEY-----\n${body}\n-----END ${kind}PRIVATE KEY-----`;
    expect(redact(`a ${block('', 'AAAA')} b ${block('RSA ', 'BBBB')} c`)).toBe('a [redacted] b [redacted] c');
    expect(redact(`x -----BEGIN PRIVATE KEY-----\nCCCC ${block('EC ', 'DDDD')} y`)).toBe('x [redacted] y');
    expect(redact(JSON.stringify({ k: block('', 'EEEE') }))).toBe('{"k":"[redacted]"}');
  });

  it('does what the earlier spelling of the JWT shape did, on any text', () => {
    // Runs of base64url characters with "eyJ" at various places, cut by dots and other characters.
    const text = fc
      .array(
        fc.oneof(
          { arbitrary: fc.constantFrom('eyJ', 'eyJabcdef', 'eyJabcdefgh.', '-eyJ', '-', '_', 'ab', 'Z9', 'x'), weight: 6 },
          { arbitrary: fc.constant('.'), weight: 3 },
          { arbitrary: fc.constantFrom(' ', '"', '=', ':', '/', '\u00e9', '$1'), weight: 1 },
          { arbitrary: fc.string({ maxLength: 3 }), weight: 1 },
        ),
        { maxLength: 20 },
      )
      .map((parts) => parts.join(''));
    fc.assert(
      fc.property(text, (t) => {
        expect(applyShape(t, shape('eyJ'))).toBe(t.replace(before.jwt, '[redacted]'));
      }),
      { numRuns: 20000 },
    );
  });

  it('does what the earlier spelling of the private-key shape did, on any text', () => {
    const pieces = ['-----BEGIN PRIVATE KEY-----', '-----END PRIVATE KEY-----', '-----BEGIN RSA PRIVATE KEY-----', '-----END EC PRIVATE KEY-----', '-----BEGIN ', '-----END ', 'PRIVATE KEY-----', 'RSA ', 'MIIE', '\n', '\\n', ' ', '-', '$1'];
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constantFrom(...pieces), fc.string({ maxLength: 4 })), { maxLength: 16 }), (parts) => {
        const t = parts.join('');
        expect(applyShape(t, shape('BEGIN'))).toBe(t.replace(before.pem, '[redacted]'));
      }),
      { numRuns: 20000 },
    );
  });
});

describe('redact: configured secrets in other spellings', () => {
  const SECRET = 'sk-hostile-0123456789abcdef';
  // Bytes that base64 writes with "+" and "/", so its base64url form differs.
  const BINARY = 'pw\u00ff\u00fe>>>??~~\u00fb\u00ef';
  const secrets = compileSecrets([SECRET, BINARY]);
  const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
  const b64url = (s: string) => Buffer.from(s, 'utf8').toString('base64url');

  it('removes a secret in any case', () => {
    expect(redact('401: key SK-HOSTILE-0123456789ABCDEF is not valid', secrets)).toBe('401: key [redacted] is not valid');
    expect(redact('echo Sk-HoStIlE-0123456789AbCdEf.', secrets)).toBe('echo [redacted].');
  });

  it('removes the base64 and base64url text holding a secret, wherever it sits in what was encoded', () => {
    expect(b64(BINARY)).toMatch(/[+/]/);
    for (const value of [SECRET, BINARY]) {
      for (let before = 0; before < 6; before++) {
        for (let after = 0; after < 4; after++) {
          const plain = `${'user:'.slice(0, before)}${value}${'\u00e9xyz'.slice(0, after)}`;
          for (const encoded of [b64(plain), b64url(plain)]) {
            expect(redact(`proxy echoed ${encoded}, done`, secrets), plain).toBe('proxy echoed [redacted], done');
            expect(redactJson({ vendor_data: { authorization: encoded } }, secrets)).toEqual({ vendor_data: { authorization: '[redacted]' } });
          }
        }
      }
    }
  });

  it('removes the whole run around the encoded secret, its padding included, and nothing else', () => {
    const text = `a "${b64(`client:${SECRET}`)}" b (${b64url(`${SECRET}!`)}) c`;
    expect(redact(text, secrets)).toBe('a "[redacted]" b ([redacted]) c');
    expect(b64(`x${SECRET}`).endsWith('=')).toBe(true);
    expect(redact(`h=${b64(`x${SECRET}`)}&n=2`, secrets)).toBe('h=[redacted]&n=2');
  });

  it('leaves other base64 text, and is idempotent', () => {
    const other = `echo ${b64('client:another-password-entirely')} ${b64url('sk-hostile-987654321')}`;
    expect(redact(other, secrets)).toBe(other);
    const once = redact(`${b64(SECRET)} ${SECRET.toUpperCase()} ${b64url(`:${BINARY}`)}`, secrets);
    expect(once).toBe('[redacted] [redacted] [redacted]');
    expect(redact(once, secrets)).toBe(once);
  });

  it('never lets a secret through in any of these spellings, whatever surrounds it', () => {
    const around = fc.string({ maxLength: 6 });
    const spelling = fc.constantFrom<(s: string) => string>((s) => s, (s) => s.toUpperCase(), (s) => s.toLowerCase(), b64, b64url);
    fc.assert(
      fc.property(around, around, around, around, fc.constantFrom(SECRET, BINARY), spelling, (outerBefore, innerBefore, innerAfter, outerAfter, value, spell) => {
        const spelt = spell(`${innerBefore}${value}${innerAfter}`);
        const out = redact(`${outerBefore}${spelt}${outerAfter}`, secrets);
        expect(out.toLowerCase()).not.toContain(value.toLowerCase());
        expect(out).not.toContain(spelt);
      }),
      { numRuns: 5000 },
    );
  });
});
