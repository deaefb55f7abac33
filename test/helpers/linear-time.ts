import vm from 'node:vm';

/**
 * Whether work grows linearly with its input, measured the way test/core/redact-linear.test.ts
 * does: an input 32 times larger must not take more than MAX_RATIO times as long (quadratic work
 * takes 1024 times as long, linear work 32 times, and up to about 100 when a large input no longer
 * fits a cache). The time is this process's CPU time, not the wall clock, so a busy machine does
 * not grow the ratio; each run starts after a scavenge, and each time is the fastest of a few runs.
 * A large run under FLOOR_MS passes whatever the ratio; one over LIMIT_MS (wall clock) is stopped.
 */
export const SIZE_RATIO = 32;
const MAX_RATIO = 300;
const FLOOR_MS = 250;
const LIMIT_MS = 5000;

/** The test process runs with --expose-gc (vitest.config.ts). */
const gc = (globalThis as { gc?: (options: { type: 'minor' }) => void }).gc;
const context = vm.createContext({ run: () => {} });
const script = new vm.Script('run()');

/** The CPU time (ms) one run of `fn` takes; Infinity if it ran past LIMIT_MS (it is stopped there). */
function cpuTimeOf(fn: () => void): number {
  context.run = fn;
  gc?.({ type: 'minor' });
  const start = process.cpuUsage();
  try {
    // A script timeout interrupts synchronous work that is still running.
    script.runInContext(context, { timeout: LIMIT_MS });
  } catch {
    return Infinity;
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

const isLinear = (tSmall: number, tLarge: number): boolean => tLarge < FLOOR_MS || tLarge < MAX_RATIO * tSmall;

/**
 * The CPU times of `run` on the input `make(small)` and on `make(small * SIZE_RATIO)`, and whether
 * they are in a linear ratio. Inputs are made outside the measured runs.
 */
export function measureLinear<T>(small: number, make: (n: number) => T, run: (input: T) => void): { linear: boolean; detail: string } {
  const a = make(small);
  const b = make(small * SIZE_RATIO);
  // Compiles and warms up what runs.
  run(make(small));
  let tSmall = Infinity;
  for (let i = 0; i < 5; i++) {
    tSmall = Math.min(tSmall, cpuTimeOf(() => run(a)));
    // A small input that takes this long is slow by itself: more runs only cost time.
    if (tSmall >= FLOOR_MS) break;
  }
  let tLarge = Infinity;
  for (let i = 0; i < 5; i++) {
    const t = cpuTimeOf(() => run(b));
    tLarge = Math.min(tLarge, t);
    if (t === Infinity || isLinear(tSmall, tLarge)) break;
  }
  return { linear: isLinear(tSmall, tLarge), detail: `${small}: ${tSmall.toFixed(2)} ms, ${small * SIZE_RATIO}: ${tLarge.toFixed(2)} ms` };
}
