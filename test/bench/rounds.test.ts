import { describe, expect, it } from 'vitest';
import { medianOfRounds, rotatingRounds, type PathMeter, type PhaseResult } from '../../bench/sections/paths.js';

/** One round of a phase as the meter reports it. */
function round(cpu: number, p50: number, p99: number, throughput: number, ok = 100, max = p99 * 2): PhaseResult {
  return {
    latenciesMs: [p50],
    ok,
    failed: 0,
    bytes: ok * 10,
    elapsedMs: 1_000,
    summary: { count: ok, p50, p99, max },
    cpuPerRequest: cpu,
    throughput,
  };
}

/** The bench's embeddings and polls phases: several rounds per path, each figure the median of its rounds. */
describe('medianOfRounds', () => {
  it('takes each figure from its own median round, so one disturbed round does not decide it', () => {
    // The floor proxy's one-connection CPU per request read 100, 321 and 116 us in three runs within an hour.
    const m = medianOfRounds([round(100, 0.2, 1.0, 5_000), round(321, 0.9, 9.0, 2_000), round(116, 0.25, 1.2, 4_800)]);
    expect(m.cpuPerRequest).toBe(116);
    expect(m.summary.p50).toBe(0.25);
    expect(m.summary.p99).toBe(1.2);
    expect(m.throughput).toBe(4_800);
  });

  it('adds up what was served and keeps the worst latency and the first error', () => {
    const a = round(1, 1, 1, 1, 10, 5);
    const b = { ...round(2, 2, 2, 2, 20, 50), failed: 3, firstError: 'ECONNRESET' };
    const c = round(3, 3, 3, 3, 30, 7);
    const m = medianOfRounds([a, b, c]);
    expect(m.ok).toBe(60);
    expect(m.failed).toBe(3);
    expect(m.summary.count).toBe(60);
    expect(m.summary.max).toBe(50);
    expect(m.firstError).toBe('ECONNRESET');
    expect(m.latenciesMs).toHaveLength(3);
  });

  it('takes the lower middle of an even count and skips rounds that served nothing', () => {
    expect(medianOfRounds([round(10, 1, 1, 1), round(30, 1, 1, 1)]).cpuPerRequest).toBe(10);
    expect(medianOfRounds([round(Number.NaN, 1, 1, 1), round(40, 1, 1, 1), round(20, 1, 1, 1)]).cpuPerRequest).toBe(20);
  });

  it('returns a single round as it is', () => {
    const only = round(5, 6, 7, 8);
    expect(medianOfRounds([only])).toBe(only);
  });
});

describe('rotatingRounds', () => {
  it('starts each round one path later and returns each path its own rounds', async () => {
    const order: string[] = [];
    const meters = ['floor', 'gateway', 'peer'].map((name) => ({ path: { name } }) as unknown as PathMeter);
    let n = 0;
    const out = await rotatingRounds(meters, 3, async (m) => {
      order.push(m.path.name);
      return `${m.path.name}#${n++}`;
    });
    expect(order).toEqual(['floor', 'gateway', 'peer', 'gateway', 'peer', 'floor', 'peer', 'floor', 'gateway']);
    expect(out).toEqual([
      ['floor#0', 'floor#5', 'floor#7'],
      ['gateway#1', 'gateway#3', 'gateway#8'],
      ['peer#2', 'peer#4', 'peer#6'],
    ]);
  });
});
