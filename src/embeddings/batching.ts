import type { Batch, BatchLimits, EmbeddingInput } from './types.js';

/**
 * Splits the inputs into consecutive slices that respect a vendor's per-call limits (item count and,
 * when the vendor caps it, summed tokens). Order is kept: each slice knows its offset, so the
 * service puts every vector back at its input's position. An input that alone exceeds the token cap
 * travels alone; the vendor decides whether to truncate or refuse it.
 */
export function planBatches(inputs: readonly EmbeddingInput[], tokens: readonly number[], limits: BatchLimits): Batch[] {
  const maxItems = Math.max(1, Math.floor(limits.maxItems));
  const maxTokens = limits.maxTokens && limits.maxTokens > 0 ? limits.maxTokens : Infinity;
  if (inputs.length <= maxItems && sum(tokens) <= maxTokens)
    return [{ offset: 0, inputs: inputs as EmbeddingInput[], tokens: tokens as number[] }];

  const out: Batch[] = [];
  let start = 0;
  let used = 0;
  for (let i = 0; i < inputs.length; i++) {
    const t = tokens[i]!;
    const count = i - start;
    if (count > 0 && (count >= maxItems || used + t > maxTokens)) {
      out.push(slice(inputs, tokens, start, i));
      start = i;
      used = 0;
    }
    used += t;
  }
  out.push(slice(inputs, tokens, start, inputs.length));
  return out;
}

function slice(inputs: readonly EmbeddingInput[], tokens: readonly number[], from: number, to: number): Batch {
  return { offset: from, inputs: inputs.slice(from, to), tokens: tokens.slice(from, to) };
}

export function sum(values: readonly number[]): number {
  let s = 0;
  for (const v of values) s += v;
  return s;
}

/**
 * Runs `task(0..count-1)` with at most `concurrency` in flight. Tasks handle their own failures;
 * `stop()` returning true keeps the remaining ones from starting.
 */
export async function runBounded(
  count: number,
  concurrency: number,
  task: (index: number) => Promise<void>,
  stop: () => boolean,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count && !stop()) {
      const i = next++;
      await task(i);
    }
  };
  const workers: Promise<void>[] = [];
  for (let w = 0; w < Math.min(Math.max(1, concurrency), count); w++) workers.push(worker());
  await Promise.all(workers);
}
