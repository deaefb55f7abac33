import { MAX_REPORTED_TOKENS } from '../core/reported-usage.js';
import { isKey, members, skipSpace, skipValue, wholeNumber, type JsonCursor, type Member } from './raw-json.js';
import type { EncodingFormat } from './types.js';
import { base64Vector, floatVector } from './raw-vectors.js';

/**
 * A walk over an OpenAI-shaped embeddings answer that checks, without building any value, what the
 * fast path (raw.ts) must know before it forwards the bytes: one top-level object; `data` holding one
 * item per input, in input order, each with `"index"` equal to its position and one vector; `usage`
 * with whole token counts; where `model` and `usage` are. Every byte outside the vectors is looked at
 * once, in JavaScript (a few dozen per item); each vector gets one pass of its own (raw-vectors.ts).
 *
 * It takes only bodies without a backslash (one native search, first): then every string ends at the
 * next quote and every key is its own bytes, so nothing can read as one thing here and as another to
 * the client's parser (an escaped quote inside a vector, `"d\u0061ta"` as a second `data`).
 *
 * Forwarded bytes are never redacted, so nothing of the upstream's own choosing reaches the client
 * this way: only the members OpenAI's answer has (and a top-level `created`) pass, so no key the
 * upstream made up does (`{"sk-...": 1}`); `object` must be `"list"` (an item's `"embedding"`),
 * `created` a number, `true`, `false` or `null`, and each vector hold what the full parse would accept
 * and hand out (raw-vectors.ts). `model` is replaced by the public name. Anything else is parsed in
 * full, which keeps only the spec's members and refuses a vector it cannot hand out.
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
  /** The vectors' size, in floats, the same for all (a request's `dimensions` is checked against it, run.ts). */
  vectorSize: number;
}

/** What the walk has seen so far: one per answer. */
interface Walk extends Omit<AnswerLayout, 'vectorSize'>, JsonCursor {
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
const BACKSLASH = 0x5c;

const key = (s: string) => Buffer.from(s);
const DATA = key('data');
const USAGE = key('usage');
const MODEL = key('model');
const INDEX = key('index');
const EMBEDDING = key('embedding');
const PROMPT_TOKENS = key('prompt_tokens');
const TOTAL_TOKENS = key('total_tokens');
const OBJECT = key('object');
const CREATED = key('created');
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
  return { open, usageOpen: w.usageOpen, promptTokens: w.promptTokens, modelStart: w.modelStart, modelEnd: w.modelEnd, vectorSize: w.size };
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
  // Some compatible servers add when the answer was made; a number, never text.
  if (isKey(raw, k0, k1, CREATED)) return scalar(w, at);
  return -1;
};

/**
 * Token counts as plain digits (not `2.5`, nor `3.0` or `3e0`, which a JavaScript client reads as 3
 * and a Python one as a float) within the bound the bill believes (core/reported-usage.ts), and no
 * other member: the gateway's own `cost` goes first in `usage`, where an upstream's would follow it and
 * win in the client's parse.
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
  return -1;
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
    const end = w.format === 'base64' ? base64Vector(w, at) : floatVector(w, at);
    // One model embeds every input to the same size: vectors of two sizes fit no index.
    if (end < 0 || (w.size >= 0 && w.number !== w.size)) return -1;
    w.size = w.number;
    return end;
  }
  if (isKey(raw, k0, k1, OBJECT)) return literal(raw, at, EMBEDDING_OBJECT);
  return -1;
};

/** A value that can hold no text: a number, `true`, `false` or `null` (no string, object or array). */
function scalar(w: Walk, at: number): number {
  const c = w.raw[at];
  if (c === QUOTE || c === LBRACE || c === LBRACKET) return -1;
  return skipValue(w, at);
}

/** The value at `at` is exactly `expected` (a JSON string, quotes included); returns where it ends. */
function literal(raw: Buffer, at: number, expected: Buffer): number {
  const end = at + expected.length;
  return end <= raw.length && raw.compare(expected, 0, expected.length, at, end) === 0 ? end : -1;
}
