import { describe, expect, it } from 'vitest';
import { findForbiddenKey } from '../../src/core/json.js';

describe('findForbiddenKey', () => {
  it('names the first forbidden key by its path, in key and element order', () => {
    expect(findForbiddenKey({ a: 1, b: { c: [1, { d: 2 }] } })).toBeUndefined();
    expect(findForbiddenKey(JSON.parse('{"a":{"__proto__":{"x":1}}}'))).toBe('a.__proto__');
    expect(findForbiddenKey({ a: [0, [1, { constructor: { prototype: 1 } }]], prototype: 1 })).toBe('a[1][1].constructor');
    expect(findForbiddenKey([{ x: 1 }, { y: { prototype: 2 } }])).toBe('[1].y.prototype');
    expect(findForbiddenKey({ a: [], b: {}, c: [[], [{}]], d: { e: { prototype: null } } })).toBe('d.e.prototype');
    expect(findForbiddenKey('prototype')).toBeUndefined();
  });

  it('walks any depth without running out of stack', () => {
    const depth = 200_000;
    const deep = JSON.parse('['.repeat(depth) + ']'.repeat(depth));
    expect(findForbiddenKey(deep)).toBeUndefined();
    const hidden = JSON.parse('{"a":'.repeat(depth) + '{"__proto__":1}' + '}'.repeat(depth));
    expect(findForbiddenKey(hidden)).toBe(`${'a.'.repeat(depth)}__proto__`);
  });
});
