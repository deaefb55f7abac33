import { describe, expect, it } from 'vitest';
import { deepMerge, mergeInto, type JsonObject } from '../../src/core/json.js';

const CASES: [string, JsonObject, JsonObject][] = [
  ['new names are added after the old ones', { a: 1 }, { b: 2, c: 3 }],
  ['a name in both takes the later value', { a: 1, b: 2 }, { a: 9 }],
  ['objects merge key by key, at any depth', { p: { x: 1, deep: { y: 1 } } }, { p: { deep: { z: 2 }, w: 3 } }],
  ['an array replaces, never merges', { list: [1, 2], o: { l: [1] } }, { list: [3], o: { l: [] } }],
  ['an object replaces a scalar, and a scalar an object', { a: 1, b: { x: 1 } }, { a: { y: 2 }, b: null }],
  ['integer-like names keep their order', { b: 1, 2: 1 }, { 1: 1, a: 1 }],
];

describe('mergeInto: deepMerge in place', () => {
  it.each(CASES)('%s', (_what, base, over) => {
    const expected = deepMerge(base, over);
    const target = structuredClone(base);
    const overBefore = structuredClone(over);
    const out = mergeInto(target, over);
    expect(out).toBe(target);
    expect(target).toEqual(expected);
    expect(Object.keys(target)).toEqual(Object.keys(expected));
    expect(over).toEqual(overBefore);
  });

  it('never writes into an object it took by reference from an earlier piece', () => {
    const client = { extra: { a: 1 } };
    const target: JsonObject = {};
    mergeInto(target, client);
    mergeInto(target, { extra: { b: 2 } });
    expect(target).toEqual({ extra: { a: 1, b: 2 } });
    expect(client).toEqual({ extra: { a: 1 } });
  });

  it('skips prototype-reaching names, as deepMerge does', () => {
    const target: JsonObject = {};
    mergeInto(target, JSON.parse('{"__proto__": {"polluted": true}, "constructor": 1, "ok": 1}'));
    expect(target).toEqual({ ok: 1 });
    expect(Object.getPrototypeOf(target)).toBe(Object.prototype);
    expect(({} as JsonObject).polluted).toBeUndefined();
  });
});
