import { cl100kCount } from '../core/tokenizers.js';
import { MAX_PIECE_CHARS, TokenCounter } from '../core/token-count.js';
import { estimateTextTokens } from '../core/token-estimate.js';
import type { EmbeddingInput, InputType } from './types.js';

/**
 * Token figures for embeddings, in two grades.
 *
 * - `estimateAll` decides admission (TPM), the balance and budget holds, and batching when every
 *   input fits: `estimateTextTokens` (core/token-estimate.ts, a one-pass scan shaped like the BPE
 *   pre-tokenizer, never above the UTF-8 size) for text, a token list's length, one unit per media input. It reads no tokenizer
 *   table; every answer that reports usage corrects the limiter and is billed by that usage.
 * - `countAll` counts exactly with cl100k_base (OpenAI's embedding models), loaded on first use. It is
 *   needed only where an estimate could be wrong in a way nothing corrects: the bill of an answer
 *   without usage, and batching against a vendor's per-call token cap (see `needsExactCount`).
 *
 * Special-token text such as "<|endoftext|>" counts as ordinary text, as the embeddings API treats it.
 * Exact counting is linear in the input and bounded per request (see core/token-count.ts).
 */
const ENCODE_OPTIONS = { disallowedSpecial: new Set<string>() };
const encode = (text: string): number => cl100kCount()(text, ENCODE_OPTIONS);

/** Media inputs (an image, a video) count as one unit each: a base64 blob has no meaningful token count. */
export const MEDIA_INPUT_TOKENS = 1;

/** Per-input estimates, in input order, without a tokenizer (see the module comment). */
export function estimateAll(inputs: readonly EmbeddingInput[], inputType?: InputType): number[] {
  const media = inputType !== undefined && inputType !== 'text';
  const out = new Array<number>(inputs.length);
  for (let i = 0; i < inputs.length; i++) {
    const input = inputs[i]!;
    if (typeof input !== 'string') out[i] = input.length;
    else if (media) out[i] = MEDIA_INPUT_TOKENS;
    else out[i] = estimateTextTokens(input);
  }
  return out;
}

/** Characters of text estimated in one turn of the event loop. */
export const ESTIMATE_STEP_CHARS = 256 * 1024;

/**
 * `estimateAll`, at once when the request's text is short (every real request: no promise), else
 * in pieces of ESTIMATE_STEP_CHARS with a turn of the event loop between them. A request may hold
 * 2,000,000 characters, and the estimate of that much random text held the loop ~60-180 ms in one
 * go on this project's 2-core machine. A cut between pieces may split a word, which costs a token or
 * two more per cut (never more than the pieces' UTF-8 size, so the bound `needsExactCount` relies on
 * holds); a cut never splits a surrogate pair.
 */
export function estimateAllBounded(inputs: readonly EmbeddingInput[], inputType?: InputType): number[] | Promise<number[]> {
  let chars = 0;
  for (const input of inputs) if (typeof input === 'string') chars += input.length;
  return chars <= ESTIMATE_STEP_CHARS ? estimateAll(inputs, inputType) : estimateInSteps(inputs, inputType);
}

async function estimateInSteps(inputs: readonly EmbeddingInput[], inputType?: InputType): Promise<number[]> {
  const media = inputType !== undefined && inputType !== 'text';
  const out = new Array<number>(inputs.length);
  let sinceTurn = 0;
  for (let i = 0; i < inputs.length; i++) {
    const input = inputs[i]!;
    if (typeof input !== 'string') out[i] = input.length;
    else if (media) out[i] = MEDIA_INPUT_TOKENS;
    else {
      let total = 0;
      for (let at = 0; at < input.length; ) {
        if (sinceTurn >= ESTIMATE_STEP_CHARS) {
          sinceTurn = 0;
          await new Promise((resolve) => setImmediate(resolve));
        }
        let end = Math.min(input.length, at + ESTIMATE_STEP_CHARS - sinceTurn);
        const before = input.charCodeAt(end - 1);
        // Not between the halves of a pair: back by one, or forward by one when the piece would be empty.
        if (end < input.length && before >= 0xd800 && before < 0xdc00) end = end - 1 > at ? end - 1 : end + 1;
        total += estimateTextTokens(input.slice(at, end));
        sinceTurn += end - at;
        at = end;
      }
      out[i] = total;
    }
  }
  return out;
}

/**
 * Whether batching against `maxTokens` needs exact counts. A cl100k token is at least one byte, so
 * texts of at most `maxTokens` bytes in total cannot reach the cap whatever their real count; only
 * larger requests pay for the tokenizer.
 */
export function needsExactCount(inputs: readonly EmbeddingInput[], maxTokens: number | undefined): boolean {
  if (!maxTokens || maxTokens <= 0) return false;
  let bound = 0;
  for (const input of inputs) {
    // A string's UTF-16 length is a lower bound of its UTF-8 size: skip the exact size when it settles it.
    bound += typeof input === 'string' ? (input.length > maxTokens ? input.length : Buffer.byteLength(input)) : input.length;
    if (bound > maxTokens) return true;
  }
  return false;
}

/** Exact per-input counts, in input order; one counting budget for the whole request. */
export async function countAll(inputs: readonly EmbeddingInput[], inputType?: InputType): Promise<number[]> {
  const counter = new TokenCounter(encode);
  const out = new Array<number>(inputs.length);
  for (let i = 0; i < inputs.length; i++) {
    const input = inputs[i]!;
    if (typeof input !== 'string') out[i] = input.length;
    else if (inputType !== undefined && inputType !== 'text') out[i] = MEDIA_INPUT_TOKENS;
    // Short inputs cannot hold the loop; counting them synchronously saves a promise per input.
    else out[i] = input.length <= MAX_PIECE_CHARS ? counter.countSync(input) : await counter.count(input);
  }
  return out;
}
