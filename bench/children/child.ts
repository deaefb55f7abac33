import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * The child side of bench/lib/children.ts: read the options, report ready (or the error that
 * prevented it), and exit cleanly on SIGTERM or when the parent goes away.
 */

export function childOptions<T>(): T {
  const raw = process.env['BENCH_CHILD_OPTIONS'];
  if (!raw) throw new Error('BENCH_CHILD_OPTIONS is not set: this script is started by bench/run.ts');
  return JSON.parse(raw) as T;
}

/** What `memory` answers: process.memoryUsage() and the V8 heap by space, in bytes. */
export interface MemoryReport {
  usage: NodeJS.MemoryUsage;
  /** Per V8 heap space: bytes in use (live and not yet collected) and bytes committed. */
  spaces: Record<string, { used: number; committed: number }>;
  /** The same after a full garbage collection (what is live). */
  afterGc: { usage: NodeJS.MemoryUsage; spaces: Record<string, { used: number; committed: number }> };
}

/** Answers the parent's `memory` message (bench/memory.ts splits each process's RSS with it). */
function answerMemoryQueries(): void {
  process.on('message', (m: unknown) => {
    if (m !== 'memory') return;
    const spaces = (): MemoryReport['spaces'] =>
      Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, { used: s.space_used_size, committed: s.space_size }]));
    const usage = process.memoryUsage();
    const before = spaces();
    // A full GC on demand without starting the process with --expose-gc (which would change it).
    setFlagsFromString('--expose-gc');
    (runInNewContext('gc') as () => void)();
    const report: MemoryReport = { usage, spaces: before, afterGc: { usage: process.memoryUsage(), spaces: spaces() } };
    process.send?.({ memory: report });
  });
}

export function ready(info: unknown): void {
  process.send?.({ ready: info });
}

/**
 * Runs `main`, reporting its result to the parent; `close` runs on SIGTERM or when the parent's
 * IPC channel closes, then the process exits normally (which is when --cpu-prof writes its file).
 */
export function runChild(main: () => Promise<{ info: unknown; close: () => Promise<void> }>): void {
  let closing = false;
  let close: (() => Promise<void>) | undefined;
  const stop = (): void => {
    if (closing) return;
    closing = true;
    // Never hang on a stuck close: the parent kills us after its grace period anyway.
    setTimeout(() => process.exit(0), 3_000).unref();
    (close ? close() : Promise.resolve()).catch(() => undefined).finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.once('disconnect', stop);
  answerMemoryQueries();
  main().then(
    (r) => {
      close = r.close;
      ready(r.info);
    },
    (e: unknown) => {
      process.send?.({ error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
      process.exit(1);
    },
  );
}
