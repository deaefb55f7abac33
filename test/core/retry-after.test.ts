import { describe, expect, it } from 'vitest';
import { retryAfterSeconds } from '../../src/http/retry-after.js';

describe('Retry-After from upstream headers', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it('reads retry-after-ms first, then seconds or an HTTP date', () => {
    expect(retryAfterSeconds({ 'retry-after-ms': '1500', 'retry-after': '9' }, now)).toBe(1.5);
    expect(retryAfterSeconds({ 'retry-after': '7' }, now)).toBe(7);
    expect(retryAfterSeconds({ 'retry-after': 'Thu, 01 Jan 2026 00:00:30 GMT' }, now)).toBe(30);
    expect(retryAfterSeconds({ 'retry-after': 'Wed, 31 Dec 2025 23:00:00 GMT' }, now)).toBe(0);
  });
  it('ignores what it cannot read', () => {
    expect(retryAfterSeconds({}, now)).toBeUndefined();
    expect(retryAfterSeconds({ 'retry-after': '' }, now)).toBeUndefined();
    expect(retryAfterSeconds({ 'retry-after': 'soon' }, now)).toBeUndefined();
    expect(retryAfterSeconds({ 'retry-after-ms': 'x', 'retry-after': '3' }, now)).toBe(3);
  });
  it('reads only delta-seconds digits or an HTTP date, never hex, exponents, signs or loose date text', () => {
    for (const raw of ['0x10', '1e9', '-5', '+3', 'Infinity', 'NaN', '3 days', '12 34', '1.5.2'])
      expect(retryAfterSeconds({ 'retry-after': raw }, now), raw).toBeUndefined();
    expect(retryAfterSeconds({ 'retry-after': ' 12 ' }, now)).toBe(12);
    expect(retryAfterSeconds({ 'retry-after': 'Sunday, 01-Jan-26 00:00:10 GMT' }, now)).toBe(10);
    for (const raw of ['1e6', '-1', '0x20', 'Infinity']) expect(retryAfterSeconds({ 'retry-after-ms': raw, 'retry-after': '4' }, now), raw).toBe(4);
  });
  it('reads a far-future value as it is (the 502 that passes it on caps it)', () => {
    expect(retryAfterSeconds({ 'retry-after': '999999999' }, now)).toBe(999_999_999);
    expect(retryAfterSeconds({ 'retry-after': 'Thu, 01 Jan 2099 00:00:00 GMT' }, now)).toBeGreaterThan(365 * 86_400);
  });
});
