import { createRequire } from 'node:module';

/**
 * The BPE tokenizers, loaded on first use. Their merge tables cost memory for the life of the
 * process (measured on Node 20: cl100k_base +35 MB RSS, o200k_base +57 MB), so a gateway that only
 * forwards embeddings with usage reported by the vendor never loads either. `require` keeps the first
 * use synchronous (counting callers cannot all await), and both come from gpt-tokenizer's CommonJS
 * build, so the process never holds the same table twice in its ESM and CommonJS copies.
 */
export type CountTokens = (text: string, options?: { disallowedSpecial?: Set<string> }) => number;

const load = createRequire(import.meta.url);
let cl100k: CountTokens | undefined;
let o200k: CountTokens | undefined;

/** cl100k_base (the text-embedding-3 models and GPT-4). */
export function cl100kCount(): CountTokens {
  return (cl100k ??= (load('gpt-tokenizer/encoding/cl100k_base') as { countTokens: CountTokens }).countTokens);
}

/** o200k_base (GPT-4o and later), the package's default encoding. */
export function o200kCount(): CountTokens {
  return (o200k ??= (load('gpt-tokenizer') as { countTokens: CountTokens }).countTokens);
}
