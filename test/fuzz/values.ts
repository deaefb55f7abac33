import fc from 'fast-check';

/**
 * Leaf values for the endpoint fuzzer: text that breaks parsers and validators, numbers at the edges
 * of what JSON, doubles, integers and micro-unit money can hold, and random JSON built from them.
 */

/** Percent-encodes, with lone surrogates (which have no UTF-8 form) sent as an invalid byte. */
export const enc = (s: string) => s.split(/([\ud800-\udfff])/).map((p) => (/^[\ud800-\udfff]$/.test(p) ? '%FF' : encodeURIComponent(p))).join('');

/** Text that tends to break parsers and validators. */
export const nasty = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom(
    '',
    ' ',
    '..',
    '../../etc/passwd',
    '%00',
    '%zz',
    '%',
    '\u0000',
    '\ud800',
    '__proto__',
    'constructor',
    'prototype',
    '<script>alert(1)</script>',
    "' OR 1=1 --",
    '${ENV}',
    'NaN',
    '-1',
    '1e309',
    '9007199254740993',
    'a'.repeat(5000),
    '😀'.repeat(50),
    'null',
    'true',
    '[fail]',
    '[moderation]',
    'http://169.254.169.254/latest/meta-data',
    'file:///etc/passwd',
  ),
);

/** Counts and sizes (max_tokens, n, seconds, dimensions, limit): the edges of every integer check. */
export const hostileCount: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(0, -0, -1, 1, 1.5, 2, 3, 4, 8, 16, 128, 2048, 2049, 2 ** 31, 2 ** 32, 2 ** 53, 2 ** 53 + 2, 1e21, 1e300, -1e300, 5e-324) },
  { weight: 1, arbitrary: fc.constantFrom('5', '1e3', '', ' 4', '0x10', 'Infinity', null, true, [], {}, [4]) },
  { weight: 2, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double({ noNaN: true }) },
);

/**
 * Money as an admin sends it (a number or a decimal string of currency units): huge, negative, zero,
 * past the 6 decimal places of a micro-unit, past 2^53 micros, exponents, spaces, other digits.
 */
export const hostileAmount: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      1e300, -1, 0, -0, 1e-7, 0.0000001, 0.000001, 0.1e-5, 1.0000005, 0.1 + 0.2, 9007199254.740991, 9007199254.740992, 9007199254740993, 1e21,
      '1e300', '0x10', ' 1', '1 ', '1.0000005', '0.000001', '9007199254.740991', '9007199254.740992', '9007199254.7409915', '-0', '+1', '.5', '5.',
      'Infinity', '-Infinity', 'NaN', '', '00000000000000000001', '1_000', '1,5', '١٢٣', '１', '1e3', '12345678901234567890', '-0.000001', '0.0000000',
    ),
  },
  { weight: 2, arbitrary: fc.nat({ max: Number.MAX_SAFE_INTEGER }).map((n) => (n / 1e6).toFixed(6)) },
  { weight: 2, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  { weight: 1, arbitrary: fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map((n) => n.toString()) },
  { weight: 1, arbitrary: fc.tuple(fc.nat(), fc.nat({ max: 99_999_999 })).map(([a, b]) => `${a}.${String(b).padStart(8, '0')}`) },
  { weight: 1, arbitrary: fc.constantFrom(null, true, [], {}, [1], { amount: 1 }) },
);

export const jsonLeaf = fc.oneof(
  nasty,
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 1, 2048, 2049, 1e300, -0, Number.MAX_SAFE_INTEGER),
  fc.boolean(),
  fc.constant(null),
);

export const jsonValue = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    jsonLeaf,
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('__proto__', 'constructor', 'prototype', 'model', 'input')), tie('value'), { maxKeys: 5 }),
  ),
})).value;

/** A value for a mutated field: usually one of the hostile kinds above, sometimes any JSON. */
export const fieldValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: jsonValue },
  { weight: 2, arbitrary: hostileCount },
  { weight: 1, arbitrary: hostileAmount },
);

/** Sets a property as JSON.parse would (an own `__proto__` key included), so it is serialised as sent. */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, configurable: true, writable: true });
}
