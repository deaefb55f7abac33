import { describe, expect, it } from 'vitest';
import { readMp4Header } from '../../src/core/mp4-header.js';
import { sampleMp4 } from '../../src/sim/media.js';
import { box } from '../helpers/mp4-boxes.js';

describe('readMp4Header on hostile nesting', () => {
  it('4,000 nested moov boxes (32 KB) are read in bounded stack: no throw, no length', () => {
    let nested = box('moov');
    for (let i = 0; i < 4_000; i++) nested = box('moov', nested);
    expect(nested.length).toBeLessThan(40_000);
    expect(() => readMp4Header(nested)).not.toThrow();
    expect(readMp4Header(nested).seconds).toBeUndefined();
  });

  it('a real file still reads at its real depth', () => {
    expect(readMp4Header(sampleMp4()).seconds).toBeGreaterThan(0);
  });
});
