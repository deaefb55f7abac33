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

export interface RawAnswer {
  /** The body to send: the upstream's bytes, with `model` replaced by the public name when it differs. */
  body: Buffer;
  promptTokens: number;
}

/**
 * Returns the body to forward and its usage, or undefined when the scan cannot vouch for the answer
 * (no usage block, odd layout); the caller then parses it in full.
 */
export function forwardOpenAIBody(raw: Buffer, publicModel: string, format: EncodingFormat): RawAnswer | undefined {
  // A server that ignored encoding_format must not hand floats to a client expecting base64.
  if (vectorForm(raw) !== format) return undefined;
  const usage = readUsage(raw);
  if (!usage) return undefined;
  const body = withModel(raw, publicModel);
  if (!body) return undefined;
  return { body, promptTokens: usage.promptTokens };
}

/** The form of the first vector: a string is base64, an array is floats. */
function vectorForm(raw: Buffer): EncodingFormat | undefined {
  let from = 0;
  // `"embedding"` is also the value of each item's `object`; the key is the one followed by a colon.
  for (let tries = 0; tries < 4; tries++) {
    const at = raw.indexOf(EMBEDDING_KEY, from);
    if (at < 0) return undefined;
    let i = skipSpace(raw, at + EMBEDDING_KEY.length);
    if (raw[i] === 0x3a) {
      i = skipSpace(raw, i + 1);
      if (raw[i] === 0x22) return 'base64';
      if (raw[i] === 0x5b /* [ */) return 'float';
      return undefined;
    }
    from = at + EMBEDDING_KEY.length;
  }
  return undefined;
}

function readUsage(raw: Buffer): { promptTokens: number } | undefined {
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
  const p = (usage as { prompt_tokens?: unknown }).prompt_tokens;
  if (typeof p !== 'number' || !Number.isFinite(p) || p < 0) return undefined;
  return { promptTokens: Math.round(p) };
}

/** The body with `"model"` set to the public name (OpenAI-compatible servers may echo a deployment name). */
function withModel(raw: Buffer, publicModel: string): Buffer | undefined {
  const wanted = Buffer.from(JSON.stringify(publicModel));
  const at = raw.lastIndexOf(MODEL_KEY);
  if (at < 0) {
    // No model at all: add one right after the opening brace.
    const open = skipSpace(raw, 0);
    if (raw[open] !== 0x7b) return undefined;
    return Buffer.concat([raw.subarray(0, open + 1), Buffer.from(`"model":`), wanted, Buffer.from(','), raw.subarray(open + 1)]);
  }
  let i = skipSpace(raw, at + MODEL_KEY.length);
  if (raw[i] !== 0x3a) return undefined;
  i = skipSpace(raw, i + 1);
  if (raw[i] !== 0x22 /* " */) return undefined;
  const end = endOfString(raw, i);
  if (end < 0) return undefined;
  if (end + 1 - i === wanted.length && raw.compare(wanted, 0, wanted.length, i, end + 1) === 0) return raw;
  return Buffer.concat([raw.subarray(0, i), wanted, raw.subarray(end + 1)]);
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
