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
