import { reportedTokens } from '../core/reported-usage.js';
import type { EmbeddingInput, InputType } from './types.js';

/** Per input, tokens a vendor may count beyond the text's own: BOS/EOS and similar special tokens. */
export const SPECIAL_TOKENS_PER_INPUT = 16;

/**
 * The input tokens a vendor's usage may report for one call, or undefined when the bill must not rest
 * on it (the caller then counts the inputs itself). An answer is billed by what it reports, so the
 * report is held to what the inputs can hold: a BPE or SentencePiece token covers at least one byte of
 * text (a token-id input is its own count), plus a few special tokens per input; and text is never
 * free, so 0 for inputs that hold some is no count either. Images and other media are counted by the
 * vendor's own rules: for them only the general bound applies (core/reported-usage.ts).
 */
export function believableTokens(reported: unknown, inputs: readonly EmbeddingInput[], inputType: InputType | undefined): number | undefined {
  // A fractional count is rounded up, as chat's is: the vendor counted at least that much.
  const n = reportedTokens(reported, Math.ceil);
  if (n === undefined || (inputType !== undefined && inputType !== 'text')) return n;
  if (n === 0) return undefined;
  // Characters first (no more than bytes): a believable count is usually far below them.
  let bound = 0;
  for (const x of inputs) bound += x.length + SPECIAL_TOKENS_PER_INPUT;
  if (n <= bound) return n;
  bound = 0;
  for (const x of inputs) bound += (typeof x === 'string' ? Buffer.byteLength(x) : x.length) + SPECIAL_TOKENS_PER_INPUT;
  return n <= bound ? n : undefined;
}
