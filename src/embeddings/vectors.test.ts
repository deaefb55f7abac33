import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { base64ToFloats, floatsToBase64, toClientForm } from './vectors.js';

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
});
