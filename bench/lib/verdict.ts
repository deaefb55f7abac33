import { median } from './stats.js';

/**
 * "Does B cost anything against A?" on a noisy machine. Each round measured A, an identical A' and
 * B back to back, so the per-round ratios A'/A and B/A see the same machine conditions. A'/A is
 * pure noise: its largest deviation over the rounds is the band inside which nothing can be told
 * apart. B costs something measurable only when its median ratio lies beyond that band, in the
 * costly direction.
 */
export interface Comparison {
  /** Median over rounds of B/A - 1 (0.05 = B is 5 % higher). */
  change: number;
  /** Range over rounds of B/A - 1. */
  changeRange: [number, number];
  /** Largest |A'/A - 1| over rounds: the noise band. */
  noise: number;
  /** Median over rounds of A'/A - 1, with its range. */
  noiseMedian: number;
  noiseRange: [number, number];
  verdict: 'no measurable cost' | 'measurable cost' | 'measurably better';
}

/** `higherIsWorse`: latency and CPU (true) or throughput (false). Arrays are per round, in the same order. */
export function compare(a: number[], aTwin: number[], b: number[], higherIsWorse: boolean): Comparison {
  const rounds = Math.min(a.length, aTwin.length, b.length);
  const noise: number[] = [];
  const change: number[] = [];
  for (let i = 0; i < rounds; i++) {
    if (!(a[i]! > 0)) continue;
    noise.push(aTwin[i]! / a[i]! - 1);
    change.push(b[i]! / a[i]! - 1);
  }
  if (change.length === 0) throw new Error('no rounds to compare');
  const band = Math.max(...noise.map(Math.abs));
  const c = median(change);
  const worse = higherIsWorse ? c : -c;
  const verdict = Math.abs(c) <= band ? 'no measurable cost' : worse > 0 ? 'measurable cost' : 'measurably better';
  return {
    change: c,
    changeRange: [Math.min(...change), Math.max(...change)],
    noise: band,
    noiseMedian: median(noise),
    noiseRange: [Math.min(...noise), Math.max(...noise)],
    verdict,
  };
}
