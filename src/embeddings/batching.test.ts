import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planBatches, runBounded } from './batching.js';

describe('planBatches', () => {
  it('keeps a request that fits in one batch', () => {
    const b = planBatches(['a', 'b'], [1, 1], { maxItems: 5 });
    expect(b).toEqual([{ offset: 0, inputs: ['a', 'b'], tokens: [1, 1] }]);
  });

  it('splits by item count and by token budget, a too-big input travelling alone', () => {
    expect(planBatches(['a', 'b', 'c', 'd', 'e'], [1, 1, 1, 1, 1], { maxItems: 2 }).map((b) => b.inputs)).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    expect(planBatches(['a', 'b', 'c', 'd'], [4, 4, 9, 1], { maxItems: 10, maxTokens: 8 }).map((b) => b.offset)).toEqual([0, 2, 3]);
  });

  it('covers every input exactly once, in order, within the limits', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 200 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 200 }),
        (tokens, maxItems, maxTokens) => {
          const inputs = tokens.map((_, i) => `i${i}`);
          const batches = planBatches(inputs, tokens, { maxItems, maxTokens });
          expect(batches.flatMap((b) => b.inputs)).toEqual(inputs);
          let offset = 0;
          for (const b of batches) {
            expect(b.offset).toBe(offset);
            offset += b.inputs.length;
            expect(b.inputs.length).toBeLessThanOrEqual(maxItems);
            const sum = b.tokens.reduce((s, t) => s + t, 0);
            if (b.inputs.length > 1) expect(sum).toBeLessThanOrEqual(maxTokens);
          }
        },
      ),
    );
  });
});

describe('runBounded', () => {
  it('never runs more than the limit at once and stops starting tasks when told', async () => {
    let running = 0;
    let peak = 0;
    const done: number[] = [];
    await runBounded(
      20,
      3,
      async (i) => {
        running++;
        peak = Math.max(peak, running);
        await new Promise((r) => setTimeout(r, 2));
        running--;
        done.push(i);
      },
      () => done.length >= 7,
    );
    expect(peak).toBe(3);
    expect(done.length).toBeGreaterThanOrEqual(7);
    expect(done.length).toBeLessThan(20);
  });
});
