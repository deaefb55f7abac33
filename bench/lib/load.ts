import { Pool } from 'undici';

/**
 * The load generator: keep-alive undici pools driven through `dispatch` with a handler that only
 * counts bytes (no stream objects per response), so the generator itself stays cheap on the
 * cores it shares with the processes under test.
 */

export interface RequestSpec {
  method: 'GET' | 'POST';
  /** A fixed path, or one per request (e.g. a different job id each time). */
  path: string | ((i: number) => string);
  headers: Record<string, string>;
  body?: string;
  /** The status that counts as success (default 200). */
  expect?: number;
}

export interface RunResult {
  /** Latency of every successful request, ms. */
  latenciesMs: number[];
  ok: number;
  failed: number;
  bytes: number;
  elapsedMs: number;
  firstError?: string;
}

export class LoadClient {
  private readonly pool: Pool;

  constructor(
    readonly origin: string,
    readonly connections: number,
  ) {
    this.pool = new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: 30_000, bodyTimeout: 30_000 });
  }

  send(spec: RequestSpec, i: number): Promise<{ status: number; bytes: number }> {
    const path = typeof spec.path === 'string' ? spec.path : spec.path(i);
    return new Promise((resolve, reject) => {
      let status = 0;
      let bytes = 0;
      this.pool.dispatch(
        { path, method: spec.method, headers: spec.headers, body: spec.body ?? null },
        {
          // Declaring onRequestStart selects undici's current handler interface.
          onRequestStart() {},
          onResponseStart(_c, s) {
            status = s;
          },
          onResponseData(_c, chunk) {
            bytes += chunk.length;
          },
          onResponseEnd() {
            resolve({ status, bytes });
          },
          onResponseError(_c, err) {
            reject(err);
          },
        },
      );
    });
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}

class Tally {
  readonly latenciesMs: number[] = [];
  ok = 0;
  failed = 0;
  bytes = 0;
  firstError: string | undefined;

  record(status: number, bytes: number, expect: number, latencyMs: number): void {
    if (status === expect) {
      this.ok++;
      this.bytes += bytes;
      this.latenciesMs.push(latencyMs);
    } else this.fail(`HTTP ${status}`);
  }

  fail(reason: string): void {
    this.failed++;
    this.firstError ??= reason;
  }

  result(elapsedMs: number): RunResult {
    return { latenciesMs: this.latenciesMs, ok: this.ok, failed: this.failed, bytes: this.bytes, elapsedMs, firstError: this.firstError };
  }
}

/** Rejects when `p` has not settled within `ms` (every phase of the benchmark is bounded). */
export async function withCap<T>(p: Promise<T>, ms: number, label: string, onCap?: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const cap = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onCap?.();
      reject(new Error(`${label}: exceeded its ${Math.round(ms / 1000)} s cap`));
    }, ms);
  });
  try {
    return await Promise.race([p, cap]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Closed loop: `workers` requests in flight at all times for `durationMs` (or until `maxRequests`),
 * each latency measured from its own send. Gives saturation throughput and one-connection latency.
 */
export async function closedLoop(
  client: LoadClient,
  spec: RequestSpec,
  opts: { workers: number; durationMs: number; maxRequests?: number },
): Promise<RunResult> {
  const tally = new Tally();
  const expect = spec.expect ?? 200;
  const start = performance.now();
  const end = start + opts.durationMs;
  const max = opts.maxRequests ?? Number.POSITIVE_INFINITY;
  let issued = 0;
  const worker = async (): Promise<void> => {
    while (performance.now() < end && issued < max) {
      const i = issued++;
      const t = performance.now();
      try {
        const r = await client.send(spec, i);
        tally.record(r.status, r.bytes, expect, performance.now() - t);
      } catch (e) {
        tally.fail((e as Error).message);
      }
    }
  };
  const run = Promise.all(Array.from({ length: opts.workers }, worker)).then(() => tally.result(performance.now() - start));
  return withCap(run, opts.durationMs + 15_000, `closed loop on ${client.origin}`);
}

/**
 * Open loop at a fixed rate: request i is due at start + i/rate and its latency is measured from
 * that scheduled time, not from when it was actually sent, so a stall that delays later sends
 * shows up in their latencies (no coordinated omission).
 */
export async function fixedRate(client: LoadClient, spec: RequestSpec, opts: { rate: number; durationMs: number }): Promise<RunResult> {
  const tally = new Tally();
  const expect = spec.expect ?? 200;
  const total = Math.max(1, Math.round((opts.rate * opts.durationMs) / 1000));
  const intervalMs = 1000 / opts.rate;
  const start = performance.now() + 5;
  let issued = 0;
  let settled = 0;
  const run = new Promise<RunResult>((resolve) => {
    const done = (): void => {
      if (++settled === total) resolve(tally.result(performance.now() - start));
    };
    const tick = (): void => {
      const now = performance.now();
      while (issued < total && start + issued * intervalMs <= now) {
        const i = issued++;
        const due = start + i * intervalMs;
        client.send(spec, i).then(
          (r) => {
            tally.record(r.status, r.bytes, expect, performance.now() - due);
            done();
          },
          (e: unknown) => {
            tally.fail((e as Error).message);
            done();
          },
        );
      }
      // Timers fire no more often than every millisecond; requests due meanwhile go out together and
      // their wait is part of their measured latency.
      if (issued < total) setTimeout(tick, Math.max(0, start + issued * intervalMs - performance.now()));
    };
    tick();
  });
  return withCap(run, opts.durationMs + 15_000, `fixed rate ${opts.rate}/s on ${client.origin}`);
}
