import { describe, expect, it } from 'vitest';
import { timeOrderedUuid } from '../../src/core/time-ordered-id.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('timeOrderedUuid', () => {
  it('is a version 7 UUID whose first 48 bits are the time', () => {
    const ms = Date.UTC(2026, 10, 23, 1, 2, 3, 456);
    const id = timeOrderedUuid(ms);
    expect(id).toMatch(V7);
    expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(ms);
  });

  it('sorts by time, and ids of the same millisecond differ', () => {
    const ids = [1, 2, 1_000, 1_700_000_000_000, 1_700_000_000_001].map((ms) => timeOrderedUuid(ms));
    expect([...ids].sort()).toEqual(ids);
    const same = new Set(Array.from({ length: 10_000 }, () => timeOrderedUuid(1_700_000_000_000)));
    expect(same.size).toBe(10_000);
  });

  it('clamps times outside 48 bits instead of breaking the layout', () => {
    expect(timeOrderedUuid(-5)).toMatch(/^00000000-0000-7/);
    expect(timeOrderedUuid(2 ** 60)).toMatch(/^ffffffff-ffff-7/);
    expect(timeOrderedUuid(Number.NaN)).toMatch(V7);
  });
});
