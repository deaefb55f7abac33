import { scanAnswer, type AnswerLayout } from './raw-scan.js';
import type { EncodingFormat } from './types.js';

/**
 * The pass-through fast path for OpenAI-shaped answers. Parsing and re-serialising thousands of floats
 * costs more CPU than the whole rest of a request, so when the upstream's body already has the spec's
 * shape the gateway forwards its bytes, changing only `model` and adding `usage.cost`. Whether it has
 * that shape is found by a walk over the bytes that never reads a vector (raw-scan.ts).
 */

const MODEL_MEMBER = Buffer.from('"model":');
const COMMA = Buffer.from(',');

export interface RawAnswer {
  /** The upstream's bytes as received; `forwardedBody` applies the changes below in one copy. */
  raw: Buffer;
  promptTokens: number;
  /** The size of every vector, in floats (base64: decoded bytes / 4). */
  vectorSize: number;
  /** Index of the `{` that opens the top-level `usage` object (which holds at least `prompt_tokens`). */
  usageOpen: number;
  /**
   * The public model name where the answer names another one: `insert` replaces `raw[start, end)`
   * (the upstream's JSON string), or goes in at `start` as a whole member when the answer has none.
   */
  model?: { start: number; end: number; insert: Buffer };
}

/**
 * Returns what to forward and its usage, or undefined when the walk cannot vouch for the answer
 * (anything but one vector per input in the form asked, item k at `"index": k`, vectors of one size,
 * base64 of whole float32 values, whole token counts); the caller then parses it in full, which puts
 * items in order, renders whole counts, or finds the answer malformed (run.ts).
 */
export function forwardOpenAIBody(raw: Buffer, publicModel: string, format: EncodingFormat, inputs: number): RawAnswer | undefined {
  const layout = scanAnswer(raw, format, inputs);
  if (!layout) return undefined;
  return {
    raw,
    promptTokens: layout.promptTokens,
    vectorSize: layout.vectorSize,
    usageOpen: layout.usageOpen,
    model: modelSplice(raw, layout, publicModel),
  };
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
 * name): undefined when it already is the public name.
 */
function modelSplice(raw: Buffer, layout: AnswerLayout, publicModel: string): RawAnswer['model'] {
  const wanted = quoted(publicModel);
  const { modelStart: start, modelEnd: end } = layout;
  // No model at all: add one right after the opening brace.
  if (start < 0) return { start: layout.open + 1, end: layout.open + 1, insert: Buffer.concat([MODEL_MEMBER, wanted, COMMA]) };
  if (end - start === wanted.length && raw.compare(wanted, 0, wanted.length, start, end) === 0) return undefined;
  return { start, end, insert: wanted };
}
