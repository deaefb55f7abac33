import { countTokens } from 'gpt-tokenizer/encoding/cl100k_base';
import { MAX_PIECE_CHARS, TokenCounter } from '../core/token-count.js';
import type { EmbeddingInput, InputType } from './types.js';

/**
 * Token estimates for admission and the balance pre-check. OpenAI's embedding models use cl100k_base;
 * other vendors tokenize differently, so the estimate is corrected with what the vendor reports.
 * Special-token text such as "<|endoftext|>" counts as ordinary text, as the embeddings API treats it.
 * Counting is linear in the input and bounded per request (see core/token-count.ts).
 */
const ENCODE_OPTIONS = { disallowedSpecial: new Set<string>() };
const encode = (text: string): number => countTokens(text, ENCODE_OPTIONS);

/** Media inputs (an image, a video) count as one unit each: a base64 blob has no meaningful token count. */
export const MEDIA_INPUT_TOKENS = 1;

/** Per-input estimates, in input order; one counting budget for the whole request. */
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
