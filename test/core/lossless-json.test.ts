import { describe, expect, it } from 'vitest';
import { clientJson, isNumberMarker, NUMBER_MARKER, parseLossless } from '../../src/core/lossless-json.js';

/** Vendor numbers a double cannot hold survive a parse and a client serialization exactly; nothing else changes. */
describe('lossless vendor JSON', () => {
  it('keeps the text of numbers a double cannot reproduce, and only those', () => {
    const text = '{"a":9007199254740993,"b":123456789012345678901234567890,"c":1e400,"d":-0,"e":-0.0,"f":1e-400,"g":0.1,"h":1.50,"i":9007199254740992,"j":[1,-2.5e3,12345678901234567]}';
    const v = parseLossless(text) as Record<string, unknown>;
    for (const k of ['a', 'b', 'c', 'd', 'e', 'f']) expect(isNumberMarker(v[k] as string), k).toBe(true);
    expect(v).toMatchObject({ g: 0.1, h: 1.5, i: 9007199254740992 });
    expect(v.j).toEqual([1, -2500, `${NUMBER_MARKER}12345678901234567`]);
    expect(clientJson(v)).toBe('{"a":9007199254740993,"b":123456789012345678901234567890,"c":1e400,"d":-0,"e":-0.0,"f":1e-400,"g":0.1,"h":1.5,"i":9007199254740992,"j":[1,-2500,12345678901234567]}');
  });

  it('never changes strings: digits, quotes and escapes inside them stay text', () => {
    const text = '{"s":"1e400 \\" 9007199254740993","t":"2025-07-27","k\\\\":"-0","12345678901234567890":1}';
    expect(parseLossless(text)).toEqual(JSON.parse(text));
  });

  it('unquotes only a whole marker value holding a number', () => {
    const lookalike = { a: `${NUMBER_MARKER}12`, b: `${NUMBER_MARKER}12x`, c: `x"${NUMBER_MARKER}12`, [`${NUMBER_MARKER}5`]: 1 };
    const out = clientJson(lookalike);
    expect(JSON.parse(out)).toEqual({ ...lookalike, a: 12 });
  });

  it('refuses what JSON.parse refuses', () => {
    expect(() => parseLossless('{"a":1e400')).toThrow();
    expect(() => parseLossless('{"a":01234567890123456789}')).toThrow();
  });
});
