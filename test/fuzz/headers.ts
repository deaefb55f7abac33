import fc from 'fast-check';
import { nasty } from './values.js';

/**
 * Header edge cases: Authorization in odd spellings, duplicated or huge; Range in every form RFC
 * 9110 allows and many it does not; giant and numerous headers; encodings the body does not have.
 */
const printable = (s: string) => s.replace(/[^\x20-\x7e]/g, '');

/** Authorization values around a right credential: other schemes and casings, spacing, duplicates. */
export function authVariants(right: string, other: string): fc.Arbitrary<string | string[] | undefined> {
  return fc.oneof(
    fc.constantFrom(
      `bearer ${right}`,
      `BEARER ${right}`,
      `Bearer  ${right}`,
      `Bearer\t${right}`,
      `Bearer ${right}x`,
      `Bearer ${right.slice(0, -1)}`,
      `Bearer ${right.toUpperCase()}`,
      `Bearer ${right}, Bearer ${other}`,
      `Basic ${Buffer.from(`${right}:`).toString('base64')}`,
      `Token ${right}`,
      right,
      'Bearer',
      'Bearer ',
      '',
    ),
    fc.constantFrom<string[]>([`Bearer ${right}`, `Bearer ${right}`], [`Bearer ${right}`, `Bearer ${other}`], [`Bearer ${other}`, `Bearer ${right}`], [`Bearer ${right}`, '']),
    fc.integer({ min: 1, max: 20_000 }).map((n) => `Bearer ${'a'.repeat(n)}`),
    fc.constant(undefined),
    nasty.map((s) => `Bearer ${printable(s)}`),
  );
}

/** Range values: single, suffix, open, reversed, beyond the end, zero-length, multiple, malformed, huge. */
export const range: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    'bytes=0-0',
    'bytes=0-',
    'bytes=-0',
    'bytes=-1',
    'bytes=0-1,4-5',
    'bytes=0-0,-1',
    'bytes=0-1,0-1,0-1',
    'bytes=10-5',
    'bytes=999999999-',
    'bytes=999999999-1000000000',
    'bytes=-999999999',
    'bytes=9007199254740993-',
    'bytes=0-9007199254740993',
    'bytes=00000000000000000000001-2',
    'bytes=1e3-',
    'bytes=-',
    'bytes=',
    'bytes= 0-1',
    'bytes=0 -1',
    'bytes=0-1,',
    'bytes=,0-1',
    'bytes=1-2-3',
    'bytes=-1-2',
    'bytes=0x10-',
    'Bytes=0-1',
    'BYTES=0-1',
    'items=0-1',
    'bytes 0-1',
    'bytes=0-1;x',
    '=0-1',
    '',
  ),
  fc.tuple(fc.option(fc.nat({ max: 20_000 }), { nil: undefined }), fc.option(fc.nat({ max: 20_000 }), { nil: undefined })).map(([a, b]) => `bytes=${a ?? ''}-${b ?? ''}`),
  fc.array(fc.tuple(fc.nat({ max: 20_000 }), fc.nat({ max: 20_000 })), { minLength: 2, maxLength: 200 }).map((rs) => `bytes=${rs.map(([a, b]) => `${a}-${b}`).join(',')}`),
  fc.integer({ min: 1, max: 9000 }).map((n) => `bytes=${'0'.repeat(n)}1-2`),
  nasty.map((s) => `bytes=${printable(s)}`),
);

/** Extra headers: the usual suspects with junk, conditional and encoding headers, giant and many headers. */
export const extraHeaders: fc.Arbitrary<Record<string, string | string[]>> = fc.oneof(
  { arbitrary: fc.dictionary(
    fc.constantFrom('x-request-id', 'accept', 'accept-encoding', 'content-encoding', 'expect', 'idempotency-key', 'x-forwarded-for', 'origin', 'cookie', 'sec-fetch-site', 'if-range', 'if-none-match', 'x-stainless-retry-count', 'openai-organization', 'user-agent'),
    nasty.map((s) => printable(s).slice(0, 200)),
    { maxKeys: 2 },
  ), weight: 5 },
  { arbitrary: fc.record({
    'accept-encoding': fc.constantFrom('gzip', 'br', 'zstd', 'deflate', 'gzip;q=0, identity;q=0', '*;q=0', 'x'),
    'content-encoding': fc.constantFrom('gzip', 'br', 'deflate', 'identity', 'gzip, gzip', 'zstd', 'x'),
  }, { requiredKeys: [] }), weight: 2 },
  { arbitrary: fc.constantFrom<Record<string, string | string[]>>(
    { expect: '100-continue' },
    { 'x-request-id': 'a'.repeat(5000) },
    { 'x-request-id': ['a', 'b'] },
    { cookie: 'gw_console=x; gw_console=y' },
    { 'sec-fetch-site': 'cross-site' },
    { 'x-forwarded-for': '1.2.3.4, ::1, garbage' },
    { accept: 'text/csv' },
    { 'if-none-match': '*' },
  ), weight: 2 },
  // Around Node's 16 KiB limit of a request head (past it: 431).
  { arbitrary: fc.integer({ min: 1_000, max: 40_000 }).map((n) => ({ 'x-pad': 'p'.repeat(n) })), weight: 1 },
  { arbitrary: fc.integer({ min: 50, max: 600 }).map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-h${i}`, 'v']))), weight: 1 },
);
