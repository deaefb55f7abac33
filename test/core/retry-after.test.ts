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
});
