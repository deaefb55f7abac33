import { describe, expect, it } from 'vitest';
import { jsonNestsDeeper } from '../../src/http/json-depth.js';

describe('jsonNestsDeeper (the scan before a JSON body is parsed)', () => {
  it('counts arrays and objects inside one another, and nothing inside strings', () => {
    expect(jsonNestsDeeper('[[[]]]', 3)).toBe(false);
    expect(jsonNestsDeeper('[[[[]]]]', 3)).toBe(true);
    expect(jsonNestsDeeper('{"a":{"b":{"c":1}}}', 3)).toBe(false);
    expect(jsonNestsDeeper('{"a":{"b":{"c":{}}}}', 3)).toBe(true);
    // Siblings do not add up.
    expect(jsonNestsDeeper('[[],[],[],[],[]]', 2)).toBe(false);
    // Brackets in strings, escaped quotes and escaped backslashes are text.
    expect(jsonNestsDeeper('["[[[[", "{{{{"]', 1)).toBe(false);
    expect(jsonNestsDeeper('["\\"[[[[", "x"]', 1)).toBe(false);
    expect(jsonNestsDeeper('["\\\\", [[[]]]]', 3)).toBe(true);
    expect(jsonNestsDeeper('["\\\\", [[]]]', 3)).toBe(false);
  });

  it('agrees with the parsed depth on random documents', () => {
    const depthOf = (v: unknown): number =>
      v !== null && typeof v === 'object' ? 1 + Math.max(0, ...Object.values(v as object).map(depthOf)) : 0;
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const make = (d: number): unknown => {
      if (d === 0 || rnd(4) === 0) return ['x', '[', '{"', 1, null][rnd(5)];
      return rnd(2) ? Array.from({ length: rnd(3) + 1 }, () => make(d - 1)) : { [`k${rnd(9)}[`]: make(d - 1), q: '}]"' };
    };
    for (let i = 0; i < 500; i++) {
      const doc = make(rnd(12));
      const text = JSON.stringify(doc);
      const depth = depthOf(doc);
      expect(jsonNestsDeeper(text, depth)).toBe(false);
      if (depth > 0) expect(jsonNestsDeeper(text, depth - 1)).toBe(true);
    }
  });
});
