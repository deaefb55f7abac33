import { describe, expect, it } from 'vitest';
import { DimensionMisses } from '../../src/embeddings/dimension-misses.js';

describe('the memory of upstreams that missed a requested size', () => {
  it('skips an upstream for that model and size until the memory ends, and nothing else', () => {
    let now = 0;
    const m = new DimensionMisses(() => now, 1_000);
    m.record('a', 'emb', 256);
    expect(m.skips('a', 'emb', 256)).toBe(true);
    expect(m.skips('a', 'emb', 512)).toBe(false);
    expect(m.skips('b', 'emb', 256)).toBe(false);
    expect(m.skips('a', 'other', 256)).toBe(false);
    now = 999;
    expect(m.skips('a', 'emb', 256)).toBe(true);
    now = 1_000;
    expect(m.skips('a', 'emb', 256)).toBe(false);
  });

  it('holds at most its bound, dropping what expired first, then the oldest', () => {
    let now = 0;
    const m = new DimensionMisses(() => now, 1_000, 3);
    m.record('a', 'emb', 1);
    now = 500;
    m.record('a', 'emb', 2);
    m.record('a', 'emb', 3);
    now = 1_200; // the first has expired
    m.record('a', 'emb', 4);
    expect([2, 3, 4].map((d) => m.skips('a', 'emb', d))).toEqual([true, true, true]);
    m.record('a', 'emb', 5); // full, none expired: the oldest goes
    expect([2, 3, 4, 5].map((d) => m.skips('a', 'emb', d))).toEqual([false, true, true, true]);
  });
});
