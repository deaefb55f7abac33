import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_VECTOR_DIMENSIONS } from './answer-bounds.js';
import { base64FloatCount, base64ToFloats, floatsToBase64, toClientForm, vectorSize, vectorValuesProblem } from './vectors.js';

describe('base64 vectors', () => {
  it('are float32 little-endian bytes, 4 per dimension, no header', () => {
    const b64 = floatsToBase64([1, -2, 0.5]);
    const bytes = Buffer.from(b64, 'base64');
    expect(bytes).toHaveLength(12);
    expect(bytes.readFloatLE(0)).toBe(1);
    expect(bytes.readFloatLE(4)).toBe(-2);
    expect(bytes.readFloatLE(8)).toBe(0.5);
    expect(bytes.subarray(0, 4)).toEqual(Buffer.from([0x00, 0x00, 0x80, 0x3f]));
    // 1536 dimensions -> 6144 bytes -> 8192 characters.
    expect(floatsToBase64(new Array(1536).fill(0.1))).toHaveLength(8192);
  });

  it('round-trip exactly for float32 values', () => {
    fc.assert(
      fc.property(fc.array(fc.float({ noNaN: true }), { maxLength: 64 }), (values) => {
        expect(base64ToFloats(floatsToBase64(values))).toEqual(values.map(Math.fround));
      }),
    );
  });

  it('convert only when the client asked the other form', () => {
    const b64 = floatsToBase64([0.25, 0.75]);
    expect(toClientForm(b64, 'base64')).toBe(b64);
    expect(toClientForm([0.25, 0.75], 'float')).toEqual([0.25, 0.75]);
    expect(toClientForm(b64, 'float')).toEqual([0.25, 0.75]);
    expect(toClientForm([0.25, 0.75], 'base64')).toBe(b64);
    expect(() => base64ToFloats(Buffer.from([1, 2, 3]).toString('base64'))).toThrow();
  });

  it('are sized in floats from their length and padding, as a decoder counts them', () => {
    // 1, 2 and 3 floats: 4, 8 and 12 bytes, padded with `==`, `=` and nothing.
    for (const n of [1, 2, 3, 1536]) {
      const b64 = floatsToBase64(new Array(n).fill(0.5));
      expect(vectorSize(b64)).toBe(n);
      expect(vectorSize(b64.replace(/=+$/, ''))).toBe(n);
      expect(vectorSize(b64)).toBe(Buffer.from(b64, 'base64').length / 4);
    }
    // 15 bytes (what Node decodes from these 21 characters) and 7 bytes: no whole floats.
    expect(vectorSize('zczMPc3MTD6amZk+zczMP')).toBeUndefined();
    expect(vectorSize('zczMPc3MTD6amZk+zczM')).toBeUndefined();
    expect(vectorSize('AAAAAAAAgD==')).toBeUndefined();
    expect(vectorSize('')).toBeUndefined();
    // Not base64: three `=`, `=` on a length that is no multiple of 4, a lone character in the last group.
    expect(base64FloatCount(12, 3)).toBeUndefined();
    expect(base64FloatCount(11, 1)).toBeUndefined();
    expect(base64FloatCount(9, 0)).toBeUndefined();
    expect(vectorSize([0.5, 1])).toBe(2);
  });

  it('are handed to base64 clients with their padding', () => {
    const b64 = floatsToBase64([0, 1]);
    expect(b64).toBe('AAAAAAAAgD8=');
    expect(toClientForm('AAAAAAAAgD8', 'base64')).toBe(b64);
    expect(toClientForm(floatsToBase64([1]).replace(/=+$/, ''), 'base64')).toBe(floatsToBase64([1]));
  });
});

describe('upstream vector values', () => {
  it('are usable only as at most MAX_VECTOR_DIMENSIONS finite float32 numbers, as floats or base64', () => {
    const b64 = (values: number[]) => Buffer.from(new Float32Array(values).buffer).toString('base64');
    for (const sound of [[0.5, -0.25, 0], [3.4028234663852886e38, -3.4028234663852886e38], new Array(MAX_VECTOR_DIMENSIONS).fill(0.1)])
      expect(vectorValuesProblem(sound)).toBeUndefined();
    expect(vectorValuesProblem(b64([0.5, -0.25]))).toBeUndefined();
    expect(vectorValuesProblem(b64(new Array(MAX_VECTOR_DIMENSIONS).fill(0.1)))).toBeUndefined();

    // JSON.parse('1e999') is Infinity; 1e39 is finite but Infinity as float32.
    for (const bad of [[Infinity, 0.5], [0.5, -Infinity], [NaN], [1e39], [0.5, '0.5'], [null], [[0.5]]])
      expect(vectorValuesProblem(bad as number[]), JSON.stringify(bad)).toMatch(/not a finite float32/);
    expect(vectorValuesProblem(new Array(MAX_VECTOR_DIMENSIONS + 1).fill(0.1))).toMatch(/more than/);
    expect(vectorValuesProblem(b64([0.5, NaN]))).toMatch(/NaN/);
    expect(vectorValuesProblem(b64([-Infinity, 0.5]))).toMatch(/Infinity/);
    expect(vectorValuesProblem(b64(new Array(MAX_VECTOR_DIMENSIONS + 1).fill(0.1)))).toMatch(/more than/);
    expect(vectorValuesProblem(Buffer.from([1, 2, 3]).toString('base64'))).toMatch(/not float32 data/);
  });
});

describe('base64 vectors the slow path hands out', () => {
  it('text with characters outside base64 is refused, though Node would decode it to whole floats', () => {
    const junk = 'AAAA AAAA!AAA\u00e9';
    expect(Buffer.from(junk, 'base64').length % 4).toBe(0);
    expect(vectorValuesProblem(junk)).toMatch(/not base64/);
    expect(vectorValuesProblem(floatsToBase64([0.5, -1]))).toBeUndefined();
  });

  it('URL-safe base64 is written again in the standard alphabet', () => {
    const std = Buffer.from(new Float32Array([-1e-30, 3.3e20, 0.999]).buffer).toString('base64');
    const urlSafe = std.replace(/\+/g, '-').replace(/\//g, '_');
    expect(urlSafe).not.toBe(std);
    expect(vectorValuesProblem(urlSafe)).toBeUndefined();
    expect(toClientForm(urlSafe, 'base64')).toBe(std);
  });
});
