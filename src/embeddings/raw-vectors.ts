import { MAX_VECTOR_DIMENSIONS } from './answer-bounds.js';
import type { JsonCursor } from './raw-json.js';
import { base64FloatCount } from './vectors.js';

/**
 * One vector of an answer the fast path forwards unparsed (raw-scan.ts): these bytes reach the client
 * as they are, so they must be what the full parse would accept and hand out (run.ts `vectorsProblem`):
 * JSON the client can read, at most MAX_VECTOR_DIMENSIONS values, each a finite float32. Each function
 * returns where the vector ends and puts its size, in floats, in `w.number`; -1 when it cannot vouch,
 * and the full parse then decides (502 and no charge for a vector it refuses).
 *
 * This runs on every answer the fast path serves, the embeddings request's hot path (bench/README.md),
 * so each is one pass with nothing built: a float vector is walked in JavaScript, its
 * digits four at a time (~0.8 ns a byte here, close to a bare loop over the bytes; a regular expression
 * over the same text measured no faster); a base64 one is decoded by Node, natively, into a buffer kept
 * for it, and only its float32 exponents are read.
 */

const QUOTE = 0x22;
const COMMA = 0x2c;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const EQUALS = 0x3d;
const URL_SAFE_62 = 0x2d; // -
const URL_SAFE_63 = 0x5f; // _

/**
 * A value below 10^38 is a finite float32 (the largest is 3.4e38). A number with `d` integer digits and
 * exponent `e` is below 10^(d + e); past this bound the full parse reads it (and refuses 1e999 or 1e39).
 */
const MAX_DECIMAL_MAGNITUDE = 38;

/** An exponent is read up to this, which already puts any value past the bound above (or rounds it to 0). */
const EXPONENT_CAP = 100_000;

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;
const isSpace = (c: number | undefined): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** Where the digits starting at `i` end (four compared a turn: most of a float vector's bytes are digits). */
function digitsEnd(raw: Buffer, i: number): number {
  for (;;) {
    if (!isDigit(raw[i])) return i;
    if (!isDigit(raw[i + 1])) return i + 1;
    if (!isDigit(raw[i + 2])) return i + 2;
    if (!isDigit(raw[i + 3])) return i + 3;
    i += 4;
  }
}

/**
 * A float vector: `[`, JSON numbers (`-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`) apart by commas,
 * JSON whitespace around them, `]`; not empty. Nothing else can pass: no string, literal, nesting, empty
 * element, `Infinity` or `NaN`.
 */
export function floatVector(w: JsonCursor, at: number): number {
  const raw = w.raw;
  if (raw[at] !== LBRACKET) return -1;
  let i = at + 1;
  let count = 0;
  for (;;) {
    while (isSpace(raw[i])) i++;
    if (raw[i] === MINUS) i++;
    const intStart = i;
    const first = raw[i];
    if (first === ZERO) i++;
    else if (isDigit(first)) i = digitsEnd(raw, i + 1);
    else return -1;
    let magnitude = i - intStart;
    if (raw[i] === DOT) {
      const from = i + 1;
      i = digitsEnd(raw, from);
      if (i === from) return -1;
    }
    let c = raw[i];
    if (c === 0x65 || c === 0x45 /* e E */) {
      c = raw[++i];
      const negative = c === MINUS;
      if (negative || c === PLUS) c = raw[++i];
      const from = i;
      let exponent = 0;
      for (; isDigit(c); c = raw[++i]) if (exponent < EXPONENT_CAP) exponent = exponent * 10 + (c! - 0x30);
      if (i === from) return -1;
      magnitude += negative ? -exponent : exponent;
    }
    if (magnitude > MAX_DECIMAL_MAGNITUDE || ++count > MAX_VECTOR_DIMENSIONS) return -1;
    while (isSpace(c)) c = raw[++i];
    if (c === RBRACKET) {
      w.number = count;
      return i + 1;
    }
    if (c !== COMMA) return -1;
    i++;
  }
}

/** Where base64 vectors are decoded: the largest vector taken (answer-bounds.ts), aligned, reused by every call. */
const SCRATCH = new ArrayBuffer(MAX_VECTOR_DIMENSIONS * 4);
const scratchBytes = Buffer.from(SCRATCH);
const scratchView = new DataView(SCRATCH);
/** A float32 whose exponent bits are all set is Infinity or NaN. */
const EXPONENT_BITS = 0x7f800000;

/**
 * A base64 vector (little-endian float32 values): the standard alphabet only, padded to whole groups of
 * four, decoding to whole float32 values of which none is Infinity or NaN. Node decodes it natively; its
 * decoder passes over what is not base64 (whitespace, `=` inside, any other byte), which then gives fewer
 * bytes than the length promises, and reads the URL-safe `-` and `_` as data, which two native searches
 * find. (Encoding the bytes again and comparing with the text says the same for ~2 us more a vector.)
 */
export function base64Vector(w: JsonCursor, at: number): number {
  const raw = w.raw;
  if (raw[at] !== QUOTE) return -1;
  const end = raw.indexOf(QUOTE, at + 1);
  if (end < 0) return -1;
  const length = end - at - 1;
  let pads = 0;
  while (pads < 3 && pads < length && raw[end - 1 - pads] === EQUALS) pads++;
  // From the length alone: padded (strict decoders refuse it otherwise; the full parse pads it), whole
  // float32 values, no more than the scratch holds.
  const floats = length % 4 === 0 ? base64FloatCount(length, pads) : undefined;
  if (floats === undefined || floats > MAX_VECTOR_DIMENSIONS) return -1;
  const bytes = scratchBytes.write(raw.toString('latin1', at + 1, end), 'base64');
  if (bytes !== floats * 4) return -1;
  const text = raw.subarray(at + 1, end);
  if (text.indexOf(URL_SAFE_62) >= 0 || text.indexOf(URL_SAFE_63) >= 0) return -1;
  for (let k = 0; k < bytes; k += 4) if ((scratchView.getInt32(k, true) & EXPONENT_BITS) === EXPONENT_BITS) return -1;
  w.number = floats;
  return end + 1;
}
