import { renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { subscribe } from 'node:diagnostics_channel';
import { Worker } from 'node:worker_threads';
import { wallNow, watchLoopGaps, type LoopGap } from './loop-gaps.js';

/**
 * Loaded with `--import` into a server child by bench/tail.ts: a timeline of what held the main
 * thread, to put each slow episode the client sees on a cause. Records, in wall-clock ms
 * (`performance.timeOrigin + performance.now()`, comparable across processes):
 *  - loop gaps (loop-gaps.ts): over 3 ms without a timer turn, with the main thread's time
 *    on a CPU and waiting for one meanwhile;
 *  - GC pauses of the main thread (kind and duration, from the `gc` performance entries);
 *  - SQLite transactions of the store (`BEGIN` to `COMMIT`/`ROLLBACK` on better-sqlite3's `exec`);
 *  - checkpoint passes that held the store's statements (reported as `restarts`), and every pass
 *    (`passives`), with its copying time on the main thread (`copies`): from the store's
 *    `gateway:sqlite-checkpoint-pass` channel, or, in a checkout from before that channel, from
 *    the checkpoint worker's RESTART requests and answers.
 * On SIGUSR2 everything recorded so far goes, as JSON, to the file named by `BENCH_STALL_OUT`
 * and the record starts over.
 */
export interface StallRecord {
  gaps: LoopGap[];
  gc: Array<{ at: number; ms: number; kind: string }>;
  commits: Array<{ at: number; ms: number }>;
  restarts: Array<{ at: number; ms: number }>;
  passives: number[];
  copies: Array<{ at: number; ms: number }>;
}

const now = wallNow;
const empty = (): StallRecord => ({ gaps: [], gc: [], commits: [], restarts: [], passives: [], copies: [] });
let record = empty();
const loop = watchLoopGaps();

const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;
    record.gc.push({ at: performance.timeOrigin + e.startTime, ms: e.duration, kind: GC_KINDS[kind] ?? String(kind) });
  }
}).observe({ entryTypes: ['gc'] });

// The store's transactions: better-sqlite3's exec carries BEGIN and COMMIT. Resolved from the
// child's own script, so a gateway built from another checkout gets its own copy patched; not
// loaded into a process that has no store (the floor proxy).
if (process.argv[1]?.endsWith('gateway.js')) {
  const Database = createRequire(process.argv[1])('better-sqlite3') as { prototype: { exec(sql: string): unknown } };
  const exec = Database.prototype.exec;
  let begun: number | undefined;
  Database.prototype.exec = function (this: unknown, sql: string) {
    if (sql.startsWith('BEGIN')) begun = now();
    const r = exec.call(this, sql);
    if ((sql === 'COMMIT' || sql === 'ROLLBACK') && begun !== undefined) {
      record.commits.push({ at: begun, ms: now() - begun });
      begun = undefined;
    }
    return r;
  };
}

// Checkpoint passes (src/store/sqlite-checkpointer.ts): times are ms since performance.timeOrigin.
subscribe('gateway:sqlite-checkpoint-pass', (m) => {
  const e = m as { held: boolean; startedAt: number; ms: number; copyStartedAt: number; copyMs: number };
  const at = performance.timeOrigin + e.startedAt;
  if (e.held) record.restarts.push({ at, ms: e.ms });
  record.passives.push(at + e.ms);
  record.copies.push({ at: performance.timeOrigin + e.copyStartedAt, ms: e.copyMs });
});

// An older checkout's checkpoint worker: a RESTART is asked for with the statement lock held, and answered.
const post = Worker.prototype.postMessage;
let restartAsked: number | undefined;
Worker.prototype.postMessage = function (this: Worker, m: unknown, ...rest: unknown[]) {
  if (m === 'restart') restartAsked = now();
  return (post as (...a: unknown[]) => void).call(this, m, ...rest);
};
const emit = Worker.prototype.emit;
Worker.prototype.emit = function (this: Worker, event: string | symbol, ...a: unknown[]) {
  const m = a[0] as { mode?: string } | undefined;
  if (event === 'message' && m?.mode === 'RESTART' && restartAsked !== undefined) {
    record.restarts.push({ at: restartAsked, ms: now() - restartAsked });
    restartAsked = undefined;
  } else if (event === 'message' && m?.mode === 'PASSIVE') record.passives.push(now());
  return emit.call(this, event, ...a);
};

process.on('SIGUSR2', () => {
  const out = process.env['BENCH_STALL_OUT'];
  if (!out) return;
  record.gaps = loop.take();
  writeFileSync(`${out}.tmp`, JSON.stringify(record));
  renameSync(`${out}.tmp`, out);
  record = empty();
});
