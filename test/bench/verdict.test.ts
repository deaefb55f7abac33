import { describe, expect, it } from 'vitest';
import { compare } from '../../bench/lib/verdict.js';

/** The tracing benchmark's verdict: a cost counts only beyond the off-vs-off noise of the same rounds. */
describe('compare', () => {
  it('calls a difference inside the off-vs-off noise no measurable cost', () => {
    const off = [100, 120, 90, 110];
    const twin = [104, 113, 95, 108]; // up to ±5.8 %
    const on = [103, 124, 92, 112]; // about +2.5 %
    const c = compare(off, twin, on, true);
    expect(c.verdict).toBe('no measurable cost');
    expect(c.noise).toBeCloseTo(7 / 120, 6);
    expect(c.change).toBeGreaterThan(0);
  });

  it('calls a difference beyond the noise a cost, in the right direction for the measure', () => {
    const off = [100, 100, 100];
    const twin = [101, 99, 100];
    expect(compare(off, twin, [120, 118, 125], true).verdict).toBe('measurable cost'); // latency up 20 %
    expect(compare(off, twin, [80, 82, 79], false).verdict).toBe('measurable cost'); // throughput down 20 %
    expect(compare(off, twin, [80, 82, 79], true).verdict).toBe('measurably better');
  });

  it('pairs by round: a machine that slows down for everyone in one round is not a cost', () => {
    const off = [100, 200, 100];
    const twin = [101, 202, 99];
    const on = [101, 203, 100];
    expect(compare(off, twin, on, true).verdict).toBe('no measurable cost');
    expect(compare(off, twin, on, true).change).toBeLessThan(0.02);
  });
});
