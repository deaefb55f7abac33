import { MAX_REPORTED_TOKENS } from '../core/reported-usage.js';
import { isKey, members, skipSpace, skipValue, wholeNumber, type JsonCursor, type Member } from './raw-json.js';
import type { EncodingFormat } from './types.js';
import { base64FloatCount } from './vectors.js';

/**
 * A walk over an OpenAI-shaped embeddings answer that checks, without building any value, what the
 * fast path (raw.ts) must know before it forwards the bytes: one top-level object; `data` holding one
 * item per input, in input order, each with `"index"` equal to its position and one vector; `usage`
 * with whole token counts; where `model` and `usage` are. Every byte outside the vectors is looked at
 * once, in JavaScript (a few dozen per item); each vector is passed over by native byte search and
 * never read, so the walk costs a small fraction of a parse and allocates nothing per item.
 *
 * It takes only bodies without a backslash (one native search, first): then every string ends at the
 * next quote and every key is its own bytes, so nothing can read as one thing here and as another to
 * the client's parser (an escaped quote inside a vector, `"d\u0061ta"` as a second `data`).
 *
 * Forwarded bytes are never redacted, so no string of the upstream's reaches the client this way: a
 * member the walk does not know may hold a number, `true`, `false` or `null` only (a vendor echoing
 * the credential it was sent, `"debug":"Bearer sk-..."`, is parsed in full instead, which keeps only
 * the spec's members); `object` must be `"list"` (an item's `"embedding"`), and a float vector may
 * hold no quote (one more native search over the vector). `model` is replaced by the public name.
 */

export interface AnswerLayout {
  /** Index of the top-level `{`. */
  open: number;
  /** Index of the `{` that opens the top-level `usage`. */
  usageOpen: number;
  promptTokens: number;
  /** The top-level `model` string, quotes included: [modelStart, modelEnd); -1 when there is none. */
  modelStart: number;
  modelEnd: number;
}

/** What the walk has seen so far: one per answer. */
interface Walk extends AnswerLayout, JsonCursor {
  format: EncodingFormat;
  inputs: number;
  sawData: boolean;
  totalTokens: number;
  /** The vectors' size, in floats (base64) or elements (float arrays); -1 before the first. */
  size: number;
  /** Position of the item being walked, and whether it had its index and its vector. */
  item: number;
  itemIndexed: boolean;
  itemVector: boolean;
}

const QUOTE = 0x22;
const COMMA = 0x2c;
const LBRACE = 0x7b;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const EQUALS = 0x3d;
const BACKSLASH = 0x5c;

const key = (s: string) => Buffer.from(s);
const DATA = key('data');
const USAGE = key('usage');
const MODEL = key('model');
const INDEX = key('index');
const EMBEDDING = key('embedding');
const PROMPT_TOKENS = key('prompt_tokens');
const TOTAL_TOKENS = key('total_tokens');
const COST = key('cost');
const OBJECT = key('object');
const LIST = key('"list"');
const EMBEDDING_OBJECT = key('"embedding"');

/** The answer's layout when it can be forwarded as it is, else undefined (the caller parses it in full). */
export function scanAnswer(raw: Buffer, format: EncodingFormat, inputs: number): AnswerLayout | undefined {
  if (inputs < 1 || raw.indexOf(BACKSLASH) >= 0) return undefined;
  const open = skipSpace(raw, 0);
  if (raw[open] !== LBRACE) return undefined;
  const w: Walk = {
    raw,
    format,
    inputs,
    open,
    usageOpen: -1,
    promptTokens: -1,
    totalTokens: -1,
    modelStart: -1,
    modelEnd: -1,
    sawData: false,
    size: -1,
    item: 0,
    itemIndexed: false,
    itemVector: false,
    number: 0,
    depth: 0,
  };
  const end = members(w, open, topMember);
  if (end < 0 || skipSpace(raw, end) !== raw.length || !w.sawData) return undefined;
  // The usage shown is the one billed: whole counts, the total (of an embedding: its input) the same.
  if (w.promptTokens < 0 || w.totalTokens !== w.promptTokens) return undefined;
  return { open, usageOpen: w.usageOpen, promptTokens: w.promptTokens, modelStart: w.modelStart, modelEnd: w.modelEnd };
}

/** A repeated top-level key is refused: the client's parser would keep the last, the walk has read the first. */
const topMember: Member<Walk> = (w, k0, k1, at) => {
  const raw = w.raw;
  if (isKey(raw, k0, k1, DATA)) {
    if (w.sawData) return -1;
    w.sawData = true;
    return items(w, at);
  }
  if (isKey(raw, k0, k1, USAGE)) {
    if (w.usageOpen >= 0 || raw[at] !== LBRACE) return -1;
    w.usageOpen = at;
    return members(w, at, usageMember);
  }
  if (isKey(raw, k0, k1, MODEL)) {
    if (w.modelStart >= 0 || raw[at] !== QUOTE) return -1;
    const end = raw.indexOf(QUOTE, at + 1);
    if (end < 0) return -1;
    w.modelStart = at;
    w.modelEnd = end + 1;
    return end + 1;
  }
  if (isKey(raw, k0, k1, OBJECT)) return literal(raw, at, LIST);
  return unknownMember(w, at);
};

/**
 * Token counts as plain digits (not `2.5`, nor `3.0` or `3e0`, which a JavaScript client reads as 3
 * and a Python one as a float) within the bound the bill believes (core/reported-usage.ts). The
 * gateway's own `cost` goes first in `usage`: an upstream's would follow it and win in the client's parse.
 */
const usageMember: Member<Walk> = (w, k0, k1, at) => {
  const raw = w.raw;
  if (isKey(raw, k0, k1, PROMPT_TOKENS)) {
    if (w.promptTokens >= 0) return -1;
    const end = wholeNumber(w, at, MAX_REPORTED_TOKENS);
    if (end < 0) return -1;
    w.promptTokens = w.number;
    return end;
  }
  if (isKey(raw, k0, k1, TOTAL_TOKENS)) {
    if (w.totalTokens >= 0) return -1;
    const end = wholeNumber(w, at, MAX_REPORTED_TOKENS);
    if (end < 0) return -1;
    w.totalTokens = w.number;
    return end;
  }
  if (isKey(raw, k0, k1, COST)) return -1;
  return unknownMember(w, at);
};

/** The `data` array: exactly one object per input, item k with `"index": k` (OpenAI's order; the full parse puts any other in order). */
function items(w: Walk, i: number): number {
  const raw = w.raw;
  if (raw[i] !== LBRACKET) return -1;
  i = skipSpace(raw, i + 1);
  for (let k = 0; ; k++) {
    if (k >= w.inputs || raw[i] !== LBRACE) return -1;
    w.item = k;
    w.itemIndexed = false;
    w.itemVector = false;
    i = members(w, i, itemMember);
    if (i < 0 || !w.itemIndexed || !w.itemVector) return -1;
    i = skipSpace(raw, i);
    if (raw[i] === RBRACKET) return k + 1 === w.inputs ? i + 1 : -1;
    if (raw[i] !== COMMA) return -1;
    i = skipSpace(raw, i + 1);
  }
}

const itemMember: Member<Walk> = (w, k0, k1, at) => {
  const raw = w.raw;
  if (isKey(raw, k0, k1, INDEX)) {
    if (w.itemIndexed) return -1;
    w.itemIndexed = true;
    const end = wholeNumber(w, at, w.inputs);
    return end >= 0 && w.number === w.item ? end : -1;
  }
  if (isKey(raw, k0, k1, EMBEDDING)) {
    if (w.itemVector) return -1;
    w.itemVector = true;
    return w.format === 'base64' ? base64Vector(w, at) : floatVector(w, at);
  }
  if (isKey(raw, k0, k1, OBJECT)) return literal(raw, at, EMBEDDING_OBJECT);
  return unknownMember(w, at);
};

/** A member the walk does not know: forwarded only when its value can hold no text (no string, object or array). */
function unknownMember(w: Walk, at: number): number {
  const c = w.raw[at];
  if (c === QUOTE || c === LBRACE || c === LBRACKET) return -1;
  return skipValue(w, at);
}

/** The value at `at` is exactly `expected` (a JSON string, quotes included); returns where it ends. */
function literal(raw: Buffer, at: number, expected: Buffer): number {
  const end = at + expected.length;
  return end <= raw.length && raw.compare(expected, 0, expected.length, at, end) === 0 ? end : -1;
}

/**
 * A base64 vector, forwarded as it is: padded to whole groups of four (strict decoders refuse it
 * otherwise), decoding to whole float32 values, as many as the others. Its length and last bytes tell.
 */
function base64Vector(w: Walk, at: number): number {
  const raw = w.raw;
  if (raw[at] !== QUOTE) return -1;
  const end = raw.indexOf(QUOTE, at + 1);
  const length = end - at - 1;
  if (end < 0 || length % 4 !== 0) return -1;
  let pads = 0;
  while (pads < 3 && pads < length && raw[end - 1 - pads] === EQUALS) pads++;
  const floats = base64FloatCount(length, pads);
  if (floats === undefined || (w.size >= 0 && floats !== w.size)) return -1;
  w.size = floats;
  return end + 1;
}

/**
 * A float vector: opens with a number (not empty, not nested), and with several inputs holds as many
 * elements as the others (its commas, counted by native search; a number holds no comma or bracket).
 */
function floatVector(w: Walk, at: number): number {
  const raw = w.raw;
  if (raw[at] !== LBRACKET) return -1;
  const first = skipSpace(raw, at + 1);
  if (!startsNumber(raw[first])) return -1;
  const close = raw.indexOf(RBRACKET, first);
  if (close < 0) return -1;
  // A string among the numbers (nothing but digits, signs, points, exponents and commas belong there).
  const quote = raw.indexOf(QUOTE, first);
  if (quote >= 0 && quote < close) return -1;
  if (w.inputs > 1) {
    let elements = 1;
    for (let c = raw.indexOf(COMMA, first); c >= 0 && c < close; c = raw.indexOf(COMMA, c + 1)) elements++;
    if (w.size >= 0 && elements !== w.size) return -1;
    w.size = elements;
  }
  return close + 1;
}

/** Whether `c` can open a JSON number (an empty vector, nested arrays or strings cannot pass). */
function startsNumber(c: number | undefined): boolean {
  return c !== undefined && ((c >= 0x30 && c <= 0x39) || c === 0x2d /* - */);
}

