import { readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

/**
 * What the kernel says about one process. CPU time comes from /proc/<pid>/stat (utime + stime of
 * every thread, including V8's GC and libuv's pool), so it is the whole cost of that process.
 */

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** User + system CPU time of `pid` so far, in microseconds (resolution: one clock tick, usually 10 ms). */
export function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  return ((utime + stime) * 1_000_000) / clockTicks();
}

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  return m ? Number(m[1]) : NaN;
}

/** Resident set size now, in bytes. */
export function rssBytes(pid: number): number {
  return statusKb(pid, 'VmRSS') * 1024;
}

/** Peak resident set size since start (or since the last `resetPeakRss`), in bytes. */
export function peakRssBytes(pid: number): number {
  return statusKb(pid, 'VmHWM') * 1024;
}

/**
 * Resets VmHWM to the current RSS (writing 5 to clear_refs, Linux >= 4.0), so the next peak read
 * covers only what follows. Returns false where the kernel refuses; callers then rely on sampling.
 */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/**
 * Samples RSS every `everyMs` until stopped, because a peak can fall between two reads of VmRSS
 * and VmHWM cannot always be reset. `stop()` returns the highest value seen.
 */
export function sampleRss(pid: number, everyMs = 10): { stop(): number } {
  let max = rssBytes(pid);
  const t = setInterval(() => {
    try {
      max = Math.max(max, rssBytes(pid));
    } catch {
      // The process is gone; keep what was seen.
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(t);
      try {
        max = Math.max(max, rssBytes(pid));
      } catch {
        // as above
      }
      return max;
    },
  };
}

/** CPU time the whole machine spent busy (all cores, all processes), in microseconds. */
export function machineBusyMicros(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
  return ((user! + nice! + system! + irq! + softirq! + steal!) * 1_000_000) / clockTicks();
}

/**
 * How much CPU processes other than the benchmark's own used while it ran: the machine's busy time
 * minus this process and its children. Other work on the same cores makes every figure noisier.
 */
export class ForeignLoad {
  private readonly busy0 = machineBusyMicros();
  private readonly self0 = process.cpuUsage();
  private readonly t0 = performance.now();

  /** `childPids` must still be running (their /proc entries are read). */
  measure(childPids: number[]): { foreignCores: number; elapsedS: number } {
    const busy = machineBusyMicros() - this.busy0;
    const self = process.cpuUsage(this.self0);
    let ours = self.user + self.system;
    for (const pid of childPids) {
      try {
        ours += cpuMicros(pid);
      } catch {
        // Exited: its time is unknown here, so it is counted as foreign (an overestimate).
      }
    }
    const elapsedS = (performance.now() - this.t0) / 1000;
    return { foreignCores: Math.max(0, busy - ours) / 1e6 / elapsedS, elapsedS };
  }
}
