import { endianness } from 'node:os';
import { MAX_VECTOR_DIMENSIONS } from './answer-bounds.js';
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

/**
 * How many float32 values base64 text of `length` characters, the last `pads` of them `=`, decodes
 * to, counted as decoders count (four characters carry three bytes, a trailing group of two or three
 * carries one or two): undefined when that is no whole, non-zero number of floats, or when the text is
 * no base64 at all (more than two `=`, a lone character in the last group, `=` in an unpadded length).
 * Judged from the length alone, so a caller need not decode (nor read) the vector.
 */
export function base64FloatCount(length: number, pads: number): number | undefined {
  const chars = length - pads;
  if (pads > 2 || chars % 4 === 1 || (pads > 0 && length % 4 !== 0)) return undefined;
  const bytes = Math.floor((chars * 3) / 4);
  return bytes > 0 && bytes % 4 === 0 ? bytes / 4 : undefined;
}

/** How many `=` end `b64` (three at most are counted: more is never base64). */
function trailingPads(b64: string): number {
  let n = 0;
  while (n < 3 && n < b64.length && b64.charCodeAt(b64.length - 1 - n) === 0x3d /* = */) n++;
  return n;
}

/** The vector's dimension: its floats, or the floats its base64 holds; undefined for base64 that is no float32 data. */
export function vectorSize(v: Vector): number | undefined {
  return typeof v === 'string' ? base64FloatCount(v.length, trailingPads(v)) : v.length;
}

const URL_SAFE = /[-_]/;

/** Base64 text as a vendor may write it: the standard alphabet, or the URL-safe one, padded or not. */
const BASE64_TEXT = /^[A-Za-z0-9+/_-]*={0,2}$/;

/**
 * The vector in the form the client asked for, converting only when the upstream used the other one.
 * Base64 without its `=` padding is written again with it: strict decoders (Python's `b64decode`,
 * which the official SDK uses) refuse it.
 */
export function toClientForm(v: Vector, format: EncodingFormat): number[] | string {
  if (format === 'base64') {
    if (typeof v !== 'string') return floatsToBase64(v);
    // Written again when unpadded or URL-safe (`-`, `_`): clients decode the standard alphabet.
    return v.length % 4 === 0 && !URL_SAFE.test(v) ? v : Buffer.from(v, 'base64').toString('base64');
  }
  return typeof v === 'string' ? base64ToFloats(v) : v;
}

/** The largest float32: a value beyond it becomes ±Infinity once packed for a base64 client. */
const FLOAT32_MAX = 3.4028234663852886e38;

/**
 * What makes one upstream vector's values unusable, if anything, in one pass over them: more than
 * MAX_VECTOR_DIMENSIONS, or one that is not a finite float32. JSON.parse reads `1e999` as Infinity,
 * which JSON.stringify writes as `null` and base64 packs as Infinity; a base64 vector can hold NaN or
 * Infinity bit patterns; an element may be no number at all (the vendors' parsers leave that to here).
 */
export function vectorValuesProblem(v: Vector): string | undefined {
  if (typeof v === 'string') return base64ValuesProblem(v);
  if (v.length > MAX_VECTOR_DIMENSIONS) return tooLong(v.length);
  for (let i = 0; i < v.length; i++) {
    const x: unknown = v[i];
    // False for NaN too; the type test first, so a numeric string is not compared as a number.
    if (typeof x !== 'number' || !(x <= FLOAT32_MAX && x >= -FLOAT32_MAX))
      return `returned a vector value that is not a finite float32 number (${typeof x === 'number' ? String(x) : typeof x})`;
  }
  return undefined;
}

function base64ValuesProblem(b64: string): string | undefined {
  // Node's decoder skips characters outside the alphabet, so text that is no base64 could pass
  // for a vector of the right size: refused here rather than handed to the client as it came.
  if (!BASE64_TEXT.test(b64)) return 'returned a base64 vector holding characters that are not base64';
  // Native decoding of a string the answer's byte cap already bounds.
  const buf = Buffer.from(b64, 'base64');
  if (buf.length % 4 !== 0) return `returned a base64 vector of ${buf.length} bytes, which is not float32 data`;
  const n = buf.length / 4;
  if (n > MAX_VECTOR_DIMENSIONS) return tooLong(n);
  for (let i = 0; i < n; i++) {
    const x = buf.readFloatLE(i * 4);
    if (!Number.isFinite(x)) return `returned a base64 vector holding ${String(x)}`;
  }
  return undefined;
}

function tooLong(n: number): string {
  return `returned a vector of ${n} values, more than the ${MAX_VECTOR_DIMENSIONS} the gateway takes`;
}
