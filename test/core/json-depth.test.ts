import { describe, expect, it } from 'vitest';
import { MAX_OBJECT_MEMBERS, jsonNestsDeeper, scanJson, scanJsonWithin } from '../../src/http/json-depth.js';

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

describe('scanJson (object members at every depth)', () => {
  const members = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":1`).join(',')}}`;

  it('counts the members of nested objects together, and each object at least once', () => {
    // The top level's two members plus 9 below: 11.
    expect(scanJson(`{"a":1,"p":${members(9)}}`, 64, 256, 11)).toBeUndefined();
    expect(scanJson(`{"a":1,"p":${members(10)}}`, 64, 256, 11)).toBe('too_many_members');
    // Objects inside arrays count, empty ones once each, and so does the array.
    expect(scanJson(`[${Array.from({ length: 4 }, () => '{}').join(',')}]`, 64, 256, 5)).toBeUndefined();
    expect(scanJson(`[${Array.from({ length: 5 }, () => '{}').join(',')}]`, 64, 256, 5)).toBe('too_many_members');
    // Arrays of scalars, and commas inside strings, are not members.
    expect(scanJson(JSON.stringify({ input: Array.from({ length: 5_000 }, (_, i) => i), s: ',,,,{,' }), 64, 256, 3)).toBeUndefined();
  });

  it('has a default above what a wide real request holds, and refuses far wider ones', () => {
    const tools = Array.from({ length: 128 }, (_, i) => ({ type: 'function', function: { name: `f${i}`, parameters: { type: 'object', properties: Object.fromEntries(Array.from({ length: 20 }, (_, k) => [`p${k}`, { type: 'string', description: 'd' }])) } } }));
    expect(scanJson(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }], tools }), 64, 256)).toBeUndefined();
    expect(scanJson(`{"model":"wan2.6-t2v","parameters":${members(MAX_OBJECT_MEMBERS)}}`, 64, 256)).toBe('too_many_members');
  });

  it('the upstream answers\' depth check looks past any number of members', () => {
    const wideThenDeep = `{"items":[${Array.from({ length: MAX_OBJECT_MEMBERS + 10 }, () => '{}').join(',')}],"x":${'['.repeat(300)}${']'.repeat(300)}}`;
    expect(jsonNestsDeeper(wideThenDeep, 256)).toBe(true);
  });
});

describe('scanJson (top-level fields, counted before a body is parsed)', () => {
  const object = (n: number) => JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])));

  it('counts the fields of the top-level object only', () => {
    expect(scanJson(object(3), 64, 3)).toBeUndefined();
    expect(scanJson(object(4), 64, 3)).toBe('too_many_fields');
    expect(scanJson('{}', 64, 1)).toBeUndefined();
    // Commas inside nested values and strings are not fields.
    expect(scanJson(JSON.stringify({ a: [1, 2, 3, 4], b: { c: 1, d: 2, e: 3 }, f: 'x,y,z,"w",\\,' }), 64, 3)).toBeUndefined();
    // A top-level array is not an object with fields (the routes refuse it as a body of their own).
    expect(scanJson(JSON.stringify([1, 2, 3, 4, 5]), 64, 3)).toBeUndefined();
  });

  it('counts arrays among the members, not the numbers or strings they hold', () => {
    // The object, the outer array and 99 inside it: 101.
    expect(scanJson(`{"x":[${'[],'.repeat(98)}[]]}`, 64, 10, 100)).toBe('too_many_members');
    expect(scanJson(`{"x":[${'[],'.repeat(97)}[]]}`, 64, 10, 100)).toBeUndefined();
    expect(scanJson(`{"x":[${'1,"a",'.repeat(10_000)}2]}`, 64, 10, 100)).toBeUndefined();
  });

  it('stops at the first field too many, whatever follows', () => {
    expect(scanJson(`${object(5).slice(0, -1)},"rest": not json at all`, 64, 3)).toBe('too_many_fields');
    expect(scanJson(`{"a":${'['.repeat(10)}`, 4, 3)).toBe('too_deep');
  });

  it('agrees with the parsed number of fields on random objects', () => {
    let seed = 11;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const value = (d: number): unknown =>
      d === 0 || rnd(3) === 0 ? [',', '{",', 1, null, 'a\\",b'][rnd(5)] : rnd(2) ? [value(d - 1), value(d - 1)] : { 'x,': value(d - 1), y: value(d - 1) };
    for (let i = 0; i < 300; i++) {
      const doc = Object.fromEntries(Array.from({ length: rnd(8) }, (_, k) => [`k${k},"`, value(3)]));
      const n = Object.keys(doc).length;
      const text = JSON.stringify(doc);
      expect(scanJson(text, 64, Math.max(n, 1))).toBeUndefined();
      if (n > 1) expect(scanJson(text, 64, n - 1)).toBe('too_many_fields');
    }
  });
});

describe('scanJsonWithin (one member budget for several texts)', () => {
  it('draws every text from the same budget and leaves what was not used', () => {
    const budget = { left: 10 };
    expect(scanJsonWithin('{"a":1,"b":2}', 64, Infinity, budget)).toBeUndefined();
    expect(budget.left).toBe(8);
    expect(scanJsonWithin('[{},{},{}]', 64, Infinity, budget)).toBeUndefined();
    expect(budget.left).toBe(4);
    expect(scanJsonWithin('{"a":1,"b":2,"c":3,"d":4}', 64, Infinity, budget)).toBeUndefined();
    expect(budget.left).toBe(0);
    expect(scanJsonWithin('[1,2,3]', 64, Infinity, budget)).toBe('too_many_members');
  });

  it('counts as scanJson does', () => {
    const text = JSON.stringify({ a: [{ b: 1, c: [1, 2] }, { d: {} }], e: 'x,{' });
    let used = 0;
    for (let max = 0; scanJson(text, 64, 256, max) !== undefined; max++) used = max + 1;
    const budget = { left: 100 };
    scanJsonWithin(text, 64, 256, budget);
    expect(100 - budget.left).toBe(used);
  });
});
