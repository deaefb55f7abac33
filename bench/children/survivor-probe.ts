import { Session } from 'node:inspector';
import { renameSync, writeFileSync } from 'node:fs';

/**
 * Loaded with `--import` into a server child by bench/survivors.ts: V8's sampling heap profiler,
 * which drops the sample of an object once a scavenge frees it but keeps it when a full collection
 * does (the inspector forces one before it hands the profile over, which would otherwise drop every
 * promoted object that died since). The process runs with an old generation large enough that no
 * other full collection comes during the window, so what is left is what entered the old generation
 * in the window (promoted, allocated there directly, or large objects), alive or dead, plus what the
 * young generation holds at the end (at most one semi-space, a few MB: small against tens of
 * thousands of requests). Each sample carries the stack that allocated it, so the bytes that reach
 * the old generation per request can be put on lines of code.
 *
 * The first SIGUSR2 starts sampling, the second stops it and writes the profile (JSON, the
 * inspector's `SamplingHeapProfile`) to the file named by `BENCH_SURVIVOR_OUT`.
 */
const session = new Session();
session.connect();
let sampling = false;

function post(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
  return new Promise((resolve, reject) => session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))));
}

process.on('SIGUSR2', () => {
  const out = process.env['BENCH_SURVIVOR_OUT'];
  if (!out) return;
  if (!sampling) {
    sampling = true;
    // 4 KB between samples on average: ~1,000 samples a second at the embeddings load.
    // BENCH_SURVIVOR_ALL=1 keeps every sample: all that was allocated, not only what survived.
    const all = process.env['BENCH_SURVIVOR_ALL'] === '1';
    void post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: all });
    return;
  }
  sampling = false;
  post('HeapProfiler.stopSampling').then(
    (r) => {
      writeFileSync(`${out}.tmp`, JSON.stringify((r as { profile: unknown }).profile));
      renameSync(`${out}.tmp`, out);
    },
    (e: unknown) => writeFileSync(out, JSON.stringify({ error: String(e) })),
  );
});
