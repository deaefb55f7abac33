import { closedLoop, fixedRate, LoadClient, type RequestSpec, type RunResult } from '../lib/load.js';
import { cpuMicros } from '../lib/proc.js';
import { median, summarize, type Summary } from '../lib/stats.js';

/**
 * The three ways a request can travel in the benchmark, and the bookkeeping common to every
 * section: each measured phase runs on all three paths back to back (so slow drift on the machine
 * hits them alike), and a path's process is charged only the CPU it spent while its own phase ran.
 */
export type PathName = 'direct' | 'floor' | 'gateway';
export const PATHS: readonly PathName[] = ['direct', 'floor', 'gateway'];

export interface Path {
  /** A PathName, or a peer gateway's name (bench/lib/peers.ts). */
  name: string;
  /** Names the path in notes when several paths share a name (a gateway on another store). */
  label?: string;
  origin: string;
  /** The process whose CPU and memory this path is charged with (upstream, proxy or gateway). */
  pid: number;
  spec: RequestSpec;
}

export interface WarmUp {
  requests: number;
  maxMs: number;
}

export interface PhaseResult extends RunResult {
  summary: Summary;
  /** CPU the path's process spent during the phase, per request it served (us). */
  cpuPerRequest: number;
  /** Successful requests per second over the phase. */
  throughput: number;
}

export class PathMeter {
  requests = 0;
  failed = 0;
  firstError: string | undefined;
  private readonly clients = new Map<number, LoadClient>();

  constructor(readonly path: Path) {}

  /** A pool of `connections` keep-alive connections, kept for the whole section so phases reuse them. */
  client(connections: number): LoadClient {
    let c = this.clients.get(connections);
    if (!c) this.clients.set(connections, (c = new LoadClient(this.path.origin, connections)));
    return c;
  }

  /** Runs one phase and measures the process's CPU during it; `measured: false` for warm-up (not counted in health). */
  async phase(run: (client: (connections: number) => LoadClient, spec: RequestSpec) => Promise<RunResult>, measured = true): Promise<PhaseResult> {
    const before = cpuMicros(this.path.pid);
    const r = await run((n) => this.client(n), this.path.spec);
    const spent = cpuMicros(this.path.pid) - before;
    if (measured) {
      this.requests += r.ok + r.failed;
      this.failed += r.failed;
      this.firstError ??= r.firstError;
    }
    const served = r.ok + r.failed;
    return { ...r, summary: summarize(r.latenciesMs), throughput: (r.ok * 1000) / r.elapsedMs, cpuPerRequest: served > 0 ? spent / served : NaN };
  }

  closedLoop(workers: number, durationMs: number, measured = true): Promise<PhaseResult> {
    return this.phase((client, spec) => closedLoop(client(workers), spec, { workers, durationMs }), measured);
  }

  /**
   * Unmeasured traffic until `w.requests` were served (or `w.maxMs` passed): V8 optimises a hot path
   * after a number of calls, not after a time, and a slow path needs longer to get there.
   */
  warmUp(w: WarmUp): Promise<PhaseResult> {
    return this.phase((client, spec) => closedLoop(client(8), spec, { workers: 8, durationMs: w.maxMs, maxRequests: w.requests }), false);
  }

  /** Open loop at `rate` over a pool large enough that a slow answer never blocks the next send. */
  fixedRate(rate: number, durationMs: number): Promise<PhaseResult> {
    return this.phase((client, spec) => fixedRate(client(64), spec, { rate, durationMs }));
  }

  async close(): Promise<void> {
    await Promise.all([...this.clients.values()].map((c) => c.close()));
    this.clients.clear();
  }
}

/** Runs `fn` for each path in order and returns the results by path name. */
export async function eachPath<T>(meters: Record<PathName, PathMeter>, fn: (m: PathMeter) => Promise<T>): Promise<Record<PathName, T>> {
  const out = {} as Record<PathName, T>;
  for (const name of PATHS) out[name] = await fn(meters[name]);
  return out;
}

/** The median of the rounds that measured something (a round that served nothing reads NaN). */
const medianMeasured = (xs: number[]): number => median(xs.filter((x) => !Number.isNaN(x)));

/**
 * Several rounds of one phase on one path as one result: each figure (CPU per request, throughput,
 * p50, p99) is the median of the rounds' (the lower middle one for an even count); counts add up.
 * On a shared machine a single phase can read 3x its neighbours (a burst of other work lands in
 * it); the median of rounds run in rotating order keeps such a round from deciding a verdict.
 */
export function medianOfRounds(rounds: readonly PhaseResult[]): PhaseResult {
  if (rounds.length === 1) return rounds[0]!;
  const sum = (f: (r: PhaseResult) => number): number => rounds.reduce((a, r) => a + f(r), 0);
  return {
    latenciesMs: rounds.flatMap((r) => r.latenciesMs),
    ok: sum((r) => r.ok),
    failed: sum((r) => r.failed),
    bytes: sum((r) => r.bytes),
    elapsedMs: sum((r) => r.elapsedMs),
    firstError: rounds.find((r) => r.firstError !== undefined)?.firstError,
    summary: {
      count: sum((r) => r.summary.count),
      p50: medianMeasured(rounds.map((r) => r.summary.p50)),
      p99: medianMeasured(rounds.map((r) => r.summary.p99)),
      max: Math.max(...rounds.map((r) => r.summary.max)),
    },
    cpuPerRequest: medianMeasured(rounds.map((r) => r.cpuPerRequest)),
    throughput: medianMeasured(rounds.map((r) => r.throughput)),
  };
}

/**
 * Runs `fn` on every meter `rounds` times, the order rotating by one each round so that no path
 * always follows the same one, and returns each meter's rounds in the order given.
 */
export async function rotatingRounds<T>(meters: readonly PathMeter[], rounds: number, fn: (m: PathMeter) => Promise<T>): Promise<T[][]> {
  const out = meters.map((): T[] => []);
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < meters.length; i++) {
      const k = (i + r) % meters.length;
      out[k]!.push(await fn(meters[k]!));
    }
  }
  return out;
}

/** Throws when a path failed requests: a broken path must not yield figures that look fine. */
export function assertHealthy(meters: PathMeter[], section: string): string[] {
  const notes: string[] = [];
  for (const m of meters) {
    if (m.failed === 0) continue;
    const share = m.failed / Math.max(1, m.requests);
    const note = `${section}, ${m.path.label ?? m.path.name}: ${m.failed} of ${m.requests} requests failed (first: ${m.firstError})`;
    if (share > 0.01) throw new Error(note);
    notes.push(note);
  }
  return notes;
}
