import { closeSync, openSync, readSync } from 'node:fs';

/** A stretch during which this thread's event loop ran no timer: how long, and where the time went. */
export interface LoopGap {
  /** Wall-clock ms (`performance.timeOrigin + performance.now()`), comparable across processes. */
  at: number;
  ms: number;
  /** This thread on a CPU meanwhile (its own work: JavaScript, GC, synchronous calls). */
  cpuMs: number;
  /** This thread runnable but waiting for a CPU (other processes or threads had them). */
  waitMs: number;
}

export const wallNow = (): number => performance.timeOrigin + performance.now();

/**
 * Watches this process's main event loop with a 1 ms interval timer: a firing more than
 * `thresholdMs` after the previous one is a gap, recorded with the main thread's scheduler figures
 * over it (`/proc/self/task/<pid>/schedstat`: ns on a CPU, ns waiting in the run queue), so a
 * busy loop and a thread the machine did not run can be told apart. Costs one small `pread` per
 * millisecond. `take` returns the gaps so far and starts over.
 */
export function watchLoopGaps(thresholdMs = 3): { take(): LoopGap[]; stop(): void } {
  const fd = openSync(`/proc/self/task/${process.pid}/schedstat`, 'r');
  const buf = Buffer.alloc(128);
  const sched = (): [number, number] => {
    const n = readSync(fd, buf, 0, buf.length, 0);
    const [run, wait] = buf.toString('latin1', 0, n).split(' ');
    return [Number(run) / 1e6, Number(wait) / 1e6];
  };
  let gaps: LoopGap[] = [];
  let last = wallNow();
  let lastSched = sched();
  const timer = setInterval(() => {
    const t = wallNow();
    const s = sched();
    if (t - last > thresholdMs) gaps.push({ at: last, ms: t - last, cpuMs: s[0] - lastSched[0], waitMs: s[1] - lastSched[1] });
    last = t;
    lastSched = s;
  }, 1);
  timer.unref();
  return {
    take() {
      const out = gaps;
      gaps = [];
      return out;
    },
    stop() {
      clearInterval(timer);
      closeSync(fd);
    },
  };
}
