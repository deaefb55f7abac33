/** Exact percentiles over every sample (sorting is cheap at these counts). */

export interface Summary {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentile of an ascending array: the smallest value with at least p% of samples at or below it. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function summarize(samples: ArrayLike<number>): Summary {
  const sorted = Float64Array.from(samples).sort();
  return { count: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.length ? sorted[sorted.length - 1]! : NaN };
}

export function median(values: number[]): number {
  return percentile(Float64Array.from(values).sort(), 50);
}
