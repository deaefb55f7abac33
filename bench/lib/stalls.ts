import type { LoopGap } from '../children/loop-gaps.js';
import type { StallRecord } from '../children/stall-probe.js';

/**
 * Puts slow requests on causes. A request is an interval [due, done] in wall-clock ms; the server's
 * record (bench/children/stall-probe.ts) and the load generator's own loop gaps are intervals too.
 * Each slow request gets the milliseconds of each cause that overlap it, and its cause is the
 * largest of them (when that is under 1 ms, nothing the probes see explains it: queueing behind
 * earlier requests on a shared machine, the upstream, the kernel).
 */
export const CAUSES = ['GC pause', 'SQLite transaction', 'other main-thread work', 'main thread waiting for a CPU', 'load generator stalled', 'nothing seen'] as const;
export type Cause = (typeof CAUSES)[number];

export interface Request {
  due: number;
  done: number;
}

const overlap = (a0: number, a1: number, b0: number, b1: number): number => Math.max(0, Math.min(a1, b1) - Math.max(a0, b0));

/** Sum of the parts of `spans` inside [t0, t1]; each span may carry a weight (a share of its length). */
function within<S extends { at: number; ms: number }>(spans: readonly S[], t0: number, t1: number, weight: (s: S) => number = () => 1): number {
  let sum = 0;
  for (const s of spans) {
    if (s.at > t1 || s.at + s.ms < t0) continue;
    sum += overlap(t0, t1, s.at, s.at + s.ms) * weight(s);
  }
  return sum;
}

export function causesOf(r: Request, server: StallRecord, client: LoopGap[]): Record<Cause, number> {
  const gc = within(server.gc, r.due, r.done);
  const sqlite = within(server.commits, r.due, r.done);
  const busy = within(server.gaps, r.due, r.done, (g) => (g.ms > 0 ? Math.min(1, g.cpuMs / g.ms) : 0));
  const waiting = within(server.gaps, r.due, r.done, (g) => (g.ms > 0 ? Math.min(1, g.waitMs / g.ms) : 0));
  const out: Record<Cause, number> = {
    'GC pause': gc,
    'SQLite transaction': sqlite,
    'other main-thread work': Math.max(0, busy - gc - sqlite),
    'main thread waiting for a CPU': waiting,
    'load generator stalled': within(client, r.due, r.done),
    'nothing seen': 0,
  };
  return out;
}

export function mainCause(c: Record<Cause, number>): Cause {
  let best: Cause = 'nothing seen';
  let ms = 1;
  for (const k of CAUSES) if (c[k] > ms) [best, ms] = [k, c[k]];
  return best;
}

/** For the given slow requests: how many had each main cause, and the mean ms of each cause over them all. */
export function attribute(slow: Request[], server: StallRecord, client: LoopGap[]): Map<Cause, { requests: number; meanMs: number }> {
  const out = new Map<Cause, { requests: number; meanMs: number }>(CAUSES.map((c) => [c, { requests: 0, meanMs: 0 }]));
  for (const r of slow) {
    const c = causesOf(r, server, client);
    out.get(mainCause(c))!.requests++;
    for (const k of CAUSES) out.get(k)!.meanMs += c[k] / slow.length;
  }
  return out;
}

/** Whether a RESTART checkpoint held the store's statements during any of the requests. */
export function duringRestart(slow: Request[], server: StallRecord): number {
  return slow.filter((r) => within(server.restarts, r.due, r.done) > 0).length;
}
