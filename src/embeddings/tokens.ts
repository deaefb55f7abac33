import { countTokens } from 'gpt-tokenizer/encoding/cl100k_base';
import type { EmbeddingInput, InputType } from './types.js';

/**
 * Token estimates for admission and the balance pre-check. OpenAI's embedding models use cl100k_base;
 * other vendors tokenize differently, so the estimate is corrected with what the vendor reports.
 * Special-token text such as "<|endoftext|>" counts as ordinary text, as the embeddings API treats it.
 */
const ENCODE_OPTIONS = { disallowedSpecial: new Set<string>() };

/** Media inputs (an image, a video) count as one unit each: a base64 blob has no meaningful token count. */
export const MEDIA_INPUT_TOKENS = 1;

export function countInputTokens(input: EmbeddingInput, inputType?: InputType): number {
  if (typeof input !== 'string') return input.length;
  if (inputType !== undefined && inputType !== 'text') return MEDIA_INPUT_TOKENS;
  return countTokens(input, ENCODE_OPTIONS);
}

/** Per-input estimates, in input order. */
export function countAll(inputs: readonly EmbeddingInput[], inputType?: InputType): number[] {
  const out = new Array<number>(inputs.length);
  for (let i = 0; i < inputs.length; i++) out[i] = countInputTokens(inputs[i]!, inputType);
  return out;
}
