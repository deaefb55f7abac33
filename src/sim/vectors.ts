import { cl100kCount, o200kCount } from '../core/tokenizers.js';
import { TokenCounter } from '../core/token-count.js';

/**
 * Deterministic vectors for the embeddings simulators: a seeded PRNG over the model and the input, so a
 * test can compute exactly what an upstream returned. Like text-embedding-3, a shortened vector
 * (`dimensions`) is the full one cut and re-normalised to unit length.
 */
export function simVector(model: string, input: string | readonly number[], nativeDims: number, dims = nativeDims): Float32Array {
  const key = typeof input === 'string' ? input : `tokens:${input.join(',')}`;
  const next = mulberry32(fnv1a(`${model}\u0000${key}`));
  const n = Math.min(dims, nativeDims);
  const raw = new Float64Array(n);
  let norm = 0;
  for (let i = 0; i < nativeDims; i++) {
    const v = next() * 2 - 1;
    if (i < n) {
      raw[i] = v;
      norm += v * v;
    }
  }
  norm = Math.sqrt(norm) || 1;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = raw[i]! / norm;
  return out;
}

const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * Characters one simulated request counts exactly. Simulators run inside the embedded default's
 * process and answer synchronously, so their counting is bounded like the gateway's (the rest of a
 * larger request is estimated); see core/token-count.ts.
 */
const SIM_EXACT_CHARS = 64 * 1024;

/** One counting budget for one simulated request. */
export function simTokenCounter(): TokenCounter {
  return new TokenCounter((text) => cl100kCount()(text, PLAIN_TEXT), SIM_EXACT_CHARS);
}

/**
 * Simulators count usage with cl100k on every answer (and the OpenAI one with o200k for chat): each
 * loads its tables when it starts, so its first answer is not the one that waits for them.
 */
export function preloadSimTokenizers(chat = false): void {
  cl100kCount();
  if (chat) o200kCount();
}

/** Tokens as the simulators count them (cl100k_base; token arrays by length). */
export function simTokens(input: string | readonly number[], counter: TokenCounter = simTokenCounter()): number {
  return typeof input === 'string' ? counter.countSync(input) : input.length;
}

function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
