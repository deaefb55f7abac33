import { reportedTokens } from '../core/reported-usage.js';
import type { EncodingFormat } from './types.js';

/**
 * The pass-through fast path for OpenAI-shaped answers. Parsing and re-serialising thousands of floats
 * costs more CPU than the whole rest of a request, so when the upstream's body already has the spec's
 * shape the gateway forwards its bytes and only reads `usage` (which OpenAI writes last) and `model`
 * by scanning the raw text. Vectors are numbers or base64 strings, neither of which can hold a quote,
 * so a key found outside `data` by a plain byte search is the real key.
 */

const TAIL_BYTES = 4096;
const USAGE_KEY = Buffer.from('"usage"');
const MODEL_KEY = Buffer.from('"model"');
const EMBEDDING_KEY = Buffer.from('"embedding"');
const MODEL_MEMBER = Buffer.from('"model":');
const COMMA = Buffer.from(',');

export interface RawAnswer {
  /** The upstream's bytes as received; `forwardedBody` applies the changes below in one copy. */
  raw: Buffer;
  promptTokens: number;
  /** Index of the `{` that opens the top-level `usage` object (which holds at least `prompt_tokens`). */
  usageOpen: number;
  /**
   * The public model name where the answer names another one: `insert` replaces `raw[start, end)`
   * (the upstream's JSON string), or goes in at `start` as a whole member when the answer has none.
   */
  model?: { start: number; end: number; insert: Buffer };
}

/**
 * Returns what to forward and its usage, or undefined when the scan cannot vouch for the answer
 * (no usage block, odd layout); the caller then parses it in full.
 */
export function forwardOpenAIBody(raw: Buffer, publicModel: string, format: EncodingFormat, inputs: number): RawAnswer | undefined {
  if (!vectorsVouched(raw, format, inputs)) return undefined;
  const usage = readUsage(raw);
  if (!usage) return undefined;
  const model = modelSplice(raw, publicModel);
  if (model === null) return undefined;
  return { raw, promptTokens: usage.promptTokens, usageOpen: usage.open, model };
}

/**
 * The body to send: the upstream's bytes with the public model name and `usageMember` (a complete
 * member and its comma, e.g. `"cost":0.00002,`) as the first member of `usage`. One copy of the
 * answer whatever is changed; the splices never overlap (the model is a string outside `usage`).
 */
export function forwardedBody(a: RawAnswer, usageMember: Buffer): Buffer {
  const { raw, model } = a;
  const atUsage = a.usageOpen + 1;
  if (!model) return Buffer.concat([raw.subarray(0, atUsage), usageMember, raw.subarray(atUsage)]);
  if (model.end <= atUsage)
    return Buffer.concat([raw.subarray(0, model.start), model.insert, raw.subarray(model.end, atUsage), usageMember, raw.subarray(atUsage)]);
  return Buffer.concat([raw.subarray(0, atUsage), usageMember, raw.subarray(atUsage, model.start), model.insert, raw.subarray(model.end)]);
}

/**
 * Whether the vectors can be forwarded unread: in the form asked for (a server that ignored
 * encoding_format must not hand floats to a client expecting base64), none empty, and one per input.
 * A single input's vector is looked at alone (no scan of the body). Several are found by a byte
 * search for their keys and must be of one size: base64 ones of one length, float ones of one element
 * count (their commas, counted by native byte search within each vector; a number holds no comma or
 * bracket). Anything else is left to the full parse, whose checks turn it into a malformed answer (run.ts).
 */
function vectorsVouched(raw: Buffer, format: EncodingFormat, inputs: number): boolean {
  let found = 0;
  let size = -1;
  let from = 0;
  // `"embedding"` is also the value of each item's `object`; the key is the one followed by a colon.
  for (let at = raw.indexOf(EMBEDDING_KEY, from); at >= 0; at = raw.indexOf(EMBEDDING_KEY, from)) {
    from = at + EMBEDDING_KEY.length;
    let i = skipSpace(raw, from);
    if (raw[i] !== 0x3a /* : */) continue;
    i = skipSpace(raw, i + 1);
    if (format === 'base64') {
      if (raw[i] !== 0x22 /* " */) return false;
      // Base64 holds no quote or backslash: the next quote ends the string.
      const end = raw.indexOf(0x22, i + 1);
      if (end <= i + 1 || (size >= 0 && end - i - 1 !== size)) return false;
      size = end - i - 1;
      from = end + 1;
    } else {
      if (raw[i] !== 0x5b /* [ */ || !startsNumber(raw[skipSpace(raw, i + 1)])) return false;
      if (inputs === 1) return true;
      const close = raw.indexOf(0x5d /* ] */, i + 1);
      if (close < 0) return false;
      const elements = countByte(raw.subarray(i + 1, close), 0x2c /* , */) + 1;
      if (size >= 0 && elements !== size) return false;
      size = elements;
      from = close + 1;
    }
    found++;
    if (inputs === 1) return true;
    if (found > inputs) return false;
  }
  return found === inputs;
}

function readUsage(raw: Buffer): { promptTokens: number; open: number } | undefined {
  const from = Math.max(0, raw.length - TAIL_BYTES);
  const at = raw.lastIndexOf(USAGE_KEY);
  if (at < from) return undefined;
  let i = skipSpace(raw, at + USAGE_KEY.length);
  if (raw[i] !== 0x3a /* : */) return undefined;
  i = skipSpace(raw, i + 1);
  if (raw[i] !== 0x7b /* { */) return undefined;
  const end = matchBrace(raw, i);
  if (end < 0) return undefined;
  let usage: unknown;
  try {
    usage = JSON.parse(raw.toString('utf8', i, end + 1));
  } catch {
    return undefined;
  }
  const promptTokens = reportedTokens((usage as { prompt_tokens?: unknown }).prompt_tokens);
  if (promptTokens === undefined) return undefined;
  return { promptTokens, open: i };
}

/** The public names' JSON bytes, made once per name (names come from the catalog, a small set). */
const modelBytes = new Map<string, Buffer>();
const MAX_MODEL_NAMES = 1_000;

function quoted(name: string): Buffer {
  let b = modelBytes.get(name);
  if (!b) {
    if (modelBytes.size >= MAX_MODEL_NAMES) modelBytes.clear();
    modelBytes.set(name, (b = Buffer.from(JSON.stringify(name))));
  }
  return b;
}

/**
 * Where `"model"` must change to the public name (OpenAI-compatible servers may echo a deployment
 * name): undefined when it already is the public name, null when the layout is not the expected one.
 */
function modelSplice(raw: Buffer, publicModel: string): RawAnswer['model'] | null {
  const wanted = quoted(publicModel);
  const at = raw.lastIndexOf(MODEL_KEY);
  if (at < 0) {
    // No model at all: add one right after the opening brace.
    const open = skipSpace(raw, 0);
    if (raw[open] !== 0x7b) return null;
    return { start: open + 1, end: open + 1, insert: Buffer.concat([MODEL_MEMBER, wanted, COMMA]) };
  }
  let i = skipSpace(raw, at + MODEL_KEY.length);
  if (raw[i] !== 0x3a) return null;
  i = skipSpace(raw, i + 1);
  if (raw[i] !== 0x22 /* " */) return null;
  const end = endOfString(raw, i);
  if (end < 0) return null;
  if (end + 1 - i === wanted.length && raw.compare(wanted, 0, wanted.length, i, end + 1) === 0) return undefined;
  return { start: i, end: end + 1, insert: wanted };
}

/** Whether `c` can open a JSON number (an empty vector, nested arrays or strings cannot pass). */
function startsNumber(c: number | undefined): boolean {
  return c !== undefined && ((c >= 0x30 && c <= 0x39) || c === 0x2d /* - */);
}

/** How many times `byte` occurs in `b`, by native search (a JavaScript loop over each byte costs more). */
function countByte(b: Buffer, byte: number): number {
  let n = 0;
  for (let at = b.indexOf(byte); at >= 0; at = b.indexOf(byte, at + 1)) n++;
  return n;
}

function skipSpace(b: Buffer, i: number): number {
  while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
  return i;
}

/** Index of the quote closing the string that opens at `start`, or -1. */
function endOfString(b: Buffer, start: number): number {
  for (let i = start + 1; i < b.length; i++) {
    if (b[i] === 0x5c /* \ */) i++;
    else if (b[i] === 0x22) return i;
  }
  return -1;
}

/** Index of the brace closing the object that opens at `start`, skipping strings, or -1. */
function matchBrace(b: Buffer, start: number): number {
  let depth = 0;
  for (let i = start; i < b.length; i++) {
    const c = b[i];
    if (c === 0x22) {
      i = endOfString(b, i);
      if (i < 0) return -1;
    } else if (c === 0x7b) depth++;
    else if (c === 0x7d && --depth === 0) return i;
  }
  return -1;
}
