import { Session } from 'node:inspector';
import { renameSync, writeFileSync } from 'node:fs';
import { GCProfiler, getHeapStatistics } from 'node:v8';

/**
 * Loaded with `--import` into a server child by bench/alloc-per-request.ts: how many bytes of V8
 * heap the process allocates in a window, and (optionally) where.
 *
 * Node 20's `v8.getHeapStatistics()` has no running total of allocated bytes, so the count is made
 * from the heap's used size around every collection: `v8.GCProfiler` reports it before and after
 * each one, and whatever the heap grew by between the end of one collection and the start of the
 * next was allocated (`(before_1 - start) + (before_2 - after_1) + ... + (end - after_n)`). That
 * counts every object the process made, whether a scavenge, a full collection or nothing freed it.
 *
 * With `BENCH_ALLOC_SAMPLING=<bytes>` the window also runs V8's sampling heap profiler with the
 * samples of objects both kinds of collection free kept, i.e. all that was allocated, each sample
 * with the stack that allocated it. Without it no inspector session is opened at all.
 *
 * The first SIGUSR2 opens the window, the second closes it and writes
 * `{ allocatedBytes, collections: { scavenges, markCompacts, other }, profile? }` as JSON to the file
 * named by `BENCH_ALLOC_OUT`.
 */
const sampling = Number(process.env['BENCH_ALLOC_SAMPLING'] ?? 0);
let session: Session | undefined;
if (sampling > 0) {
  session = new Session();
  session.connect();
}

function post(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
  return new Promise((resolve, reject) => {
    if (!session) return resolve(undefined);
    session.post(method, params, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

interface GcEntry {
  gcType: string;
  beforeGC: { heapStatistics: { usedHeapSize: number } };
  afterGC: { heapStatistics: { usedHeapSize: number } };
}

let window: { profiler: GCProfiler; usedAtStart: number } | undefined;

function open(): void {
  const profiler = new GCProfiler();
  profiler.start();
  if (session) void post('HeapProfiler.startSampling', { samplingInterval: sampling, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  window = { profiler, usedAtStart: getHeapStatistics().used_heap_size };
}

async function close(out: string): Promise<void> {
  const w = window!;
  window = undefined;
  const usedAtEnd = getHeapStatistics().used_heap_size;
  const gcs = (w.profiler.stop()?.statistics ?? []) as GcEntry[];
  let allocated = 0;
  let after = w.usedAtStart;
  const collections = { scavenges: 0, markCompacts: 0, other: 0 };
  for (const gc of gcs) {
    allocated += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - after);
    after = gc.afterGC.heapStatistics.usedHeapSize;
    if (gc.gcType === 'Scavenge' || gc.gcType === 'MinorMarkCompact') collections.scavenges++;
    else if (gc.gcType === 'MarkSweepCompact') collections.markCompacts++;
    else collections.other++;
  }
  allocated += Math.max(0, usedAtEnd - after);
  // Stopping the sampler forces a full collection; the count above is taken before it.
  const profile = session ? ((await post('HeapProfiler.stopSampling')) as { profile: unknown }).profile : undefined;
  writeFileSync(`${out}.tmp`, JSON.stringify({ allocatedBytes: allocated, collections, profile }));
  renameSync(`${out}.tmp`, out);
}

process.on('SIGUSR2', () => {
  const out = process.env['BENCH_ALLOC_OUT'];
  if (!out) return;
  if (!window) open();
  else close(out).catch((e: unknown) => writeFileSync(out, JSON.stringify({ error: String(e) })));
});
