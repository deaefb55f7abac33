import { endianness } from 'node:os';
import type { EncodingFormat, Vector } from './types.js';

/**
 * `encoding_format: "base64"` is standard base64 of the vector packed as consecutive IEEE-754 float32
 * values, little-endian, no header: exactly what the official SDKs decode. Never float64.
 */
const LITTLE_ENDIAN_HOST = endianness() === 'LE';

export function floatsToBase64(values: ArrayLike<number>): string {
  const n = values.length;
  if (LITTLE_ENDIAN_HOST) {
    const f = new Float32Array(n);
    for (let i = 0; i < n; i++) f[i] = values[i]!;
    return Buffer.from(f.buffer, f.byteOffset, f.byteLength).toString('base64');
  }
  const buf = Buffer.allocUnsafe(n * 4);
  for (let i = 0; i < n; i++) buf.writeFloatLE(values[i]!, i * 4);
  return buf.toString('base64');
}

/** Decodes a base64 float32-LE vector; throws on a byte length that is not a whole number of floats. */
export function base64ToFloats(b64: string): number[] {
  const buf = Buffer.from(b64, 'base64');
  if (buf.length % 4 !== 0) throw new Error(`base64 vector of ${buf.length} bytes is not float32 data`);
  const n = buf.length / 4;
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = buf.readFloatLE(i * 4);
  return out;
}

/** The vector in the form the client asked for, converting only when the upstream used the other one. */
export function toClientForm(v: Vector, format: EncodingFormat): number[] | string {
  if (format === 'base64') return typeof v === 'string' ? v : floatsToBase64(v);
  return typeof v === 'string' ? base64ToFloats(v) : v;
}
