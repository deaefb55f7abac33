import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { compileChildren } from './lib/compile.js';
import { onExit, runMain, startChild, useCompiledChildren, type Child } from './lib/children.js';
import { LoadClient } from './lib/load.js';
import { rssBytes } from './lib/proc.js';
import type { GatewayChildInfo } from './children/gateway.js';
import { EMBEDDING_MODEL, embeddingsGatewayConfig, productionProcess, startEmbeddingsUpstream, type BenchRun } from './lib/setup.js';
import { dropBenchSchemas, ensureServices, needsServices, STORES, type StoreName } from './lib/stores.js';

/**
 * Where the embeddings gateway's tail at a fixed rate comes from: one gateway (SQLite unless `--store=`
 * names another of bench/lib/stores.ts's, started as `npm start` starts it, plus `--node-flags`, e.g.
 * another `--heap-growing-percent`) under an open
 * loop of `--rate` requests a second, with `--trace-gc` on. Prints the latency percentiles (from
 * each request's due time), the episodes where requests took over 5 ms (when, how many, the worst),
 * and the collections V8 ran meanwhile: mark-compacts and scavenges, their count, total and
 * largest pause, and RSS at the end. Run it twice with different flags to compare settings.
 * `--idle-ms=N` leaves the gateway idle for N ms between the warm-up and the load, as the full bench
 * does (its gateways wait while the other paths run their phases): caches and pooled connections
 * that expire meanwhile show up as an episode at the start. `--tree=/other/checkout` runs that
 * checkout's gateway (its src/, this checkout's harness) for a before/after comparison.
 *
 *   node --import tsx bench/tail.ts [--rate=1000] [--requests=8000] [--node-flags="--heap-growing-percent=100"]
 *     [--store=sqlite|pg|pg-memory|sqlite-redis] [--encoding=float|base64] [--idle-ms=0] [--tree=.]
 */
const args = process.argv.slice(2);
const opt = (name: string): string | undefined => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const rate = Number(opt('rate') ?? 1000);
const total = Number(opt('requests') ?? 8000);
const flags = (opt('node-flags') ?? '').split(' ').filter(Boolean);
const store = (opt('store') ?? 'sqlite') as StoreName;
if (!(store in STORES)) throw new Error(`--store: unknown store ${store} (known: ${Object.keys(STORES).join(', ')})`);
const encoding = opt('encoding') ?? 'float';
const idleMs = Number(opt('idle-ms') ?? 0);
const tree = opt('tree');

const run: BenchRun = { dir: mkdtempSync(join(tmpdir(), 'gw-bench-tail-')) };
onExit(() => rmSync(run.dir, { recursive: true, force: true }));

/** Sends `total` requests, request i due at start + i/rate; returns [due offset, latency from due] per request. */
async function openLoop(client: LoadClient, spec: Parameters<LoadClient['send']>[0]): Promise<Array<[number, number]>> {
  const t0 = performance.now() + 20;
  const out: Array<[number, number]> = [];
  return new Promise((resolve, reject) => {
    let sent = 0;
    const tick = () => {
      const now = performance.now();
      for (; sent < total && t0 + (sent * 1000) / rate <= now; sent++) {
        const due = t0 + (sent * 1000) / rate;
        client.send(spec, sent).then(() => {
          out.push([due - t0, performance.now() - due]);
          if (out.length === total) resolve(out);
        }, reject);
      }
      // A timer, not setImmediate: a generator spinning on setImmediate takes one of the machine's two
      // cores from the processes it measures. Requests due meanwhile go out together; their wait counts.
      if (sent < total) setTimeout(tick, Math.max(0, t0 + (sent * 1000) / rate - performance.now()));
    };
    tick();
  });
}

/** The pause figures of V8's `--trace-gc` lines of one kind ("Mark-Compact", "Scavenge"). */
function pauses(lines: string[], kind: string): string {
  const ms = lines.filter((l) => l.includes(`: ${kind} `)).map((l) => Number(/MB, ([\d.]+) \//.exec(l)?.[1] ?? 0));
  const sum = ms.reduce((a, b) => a + b, 0);
  return `${kind}: ${ms.length}, ${sum.toFixed(0)} ms in all, largest ${Math.max(0, ...ms).toFixed(1)} ms`;
}

async function main(): Promise<void> {
  useCompiledChildren(await compileChildren());
  if (needsServices([store])) {
    ensureServices();
    await dropBenchSchemas('stale');
  }
  const up = await startEmbeddingsUpstream();
  const production = productionProcess();
  const logFile = join(run.dir, 'gateway.log');
  const options = { config: embeddingsGatewayConfig(run, 'gw-tail', up.info, store), account: { name: 'bench', balance: 100_000_000 }, poller: false };
  const compiledDir = tree === undefined ? undefined : await compileChildren(resolve(tree), '-tail');
  const gw: Child<GatewayChildInfo> = await startChild('gateway', 'gateway.ts', options, { nodeArgs: [...production.nodeArgs, ...flags, '--trace-gc'], env: production.env, logFile, compiledDir });
  const body = JSON.stringify({ model: EMBEDDING_MODEL, input: 'The quick brown fox jumps over the lazy dog while the benchmark measures every hop.', encoding_format: encoding });
  const spec = { method: 'POST' as const, path: '/v1/embeddings', headers: { authorization: `Bearer ${gw.info.key}`, 'content-type': 'application/json' }, body };
  const client = new LoadClient(gw.info.url, 64);
  for (let i = 0; i < 5_000; i++) await client.send(spec, i);
  if (idleMs > 0) await new Promise((r) => setTimeout(r, idleMs));
  const gcBefore = readFileSync(logFile, 'utf8').length;

  const results = await openLoop(client, spec);
  const sorted = results.map((r) => r[1]).sort((a, b) => a - b);
  const p = (q: number) => sorted[Math.floor(q * (sorted.length - 1))]!.toFixed(2);
  console.log(`${tree === undefined ? '' : `${basename(resolve(tree))}: `}${STORES[store].label}, ${encoding}; flags: ${[...production.nodeArgs, ...flags].join(' ')}; ${total} requests at ${rate}/s${idleMs > 0 ? ` after ${idleMs} ms idle` : ''}`);
  console.log(`latency from due time (ms): p50 ${p(0.5)}, p90 ${p(0.9)}, p99 ${p(0.99)}, p99.9 ${p(0.999)}, max ${p(1)}`);
  const slow = results.filter((r) => r[1] > 5).sort((a, b) => a[0] - b[0]);
  const episodes: Array<{ at: number; count: number; worst: number }> = [];
  let last = -Infinity;
  for (const [at, ms] of slow) {
    if (at - last > 20) episodes.push({ at, count: 0, worst: 0 });
    const e = episodes[episodes.length - 1]!;
    e.count++;
    e.worst = Math.max(e.worst, ms);
    last = at;
  }
  console.log(`episodes over 5 ms: ${episodes.length} (${episodes.map((e) => `${(e.at / 1000).toFixed(2)} s: ${e.count} x, worst ${e.worst.toFixed(1)} ms`).join('; ')})`);
  // V8 prefixes each line with its isolate: the main thread's is the one with the most lines (the
  // SQLite checkpoint worker is another isolate, with a heap of its own).
  const lines = readFileSync(logFile, 'utf8').slice(gcBefore).split('\n').filter((l) => l.startsWith('['));
  const isolate = (l: string) => l.slice(0, l.indexOf(']'));
  const counts = new Map<string, number>();
  for (const l of lines) counts.set(isolate(l), (counts.get(isolate(l)) ?? 0) + 1);
  const main = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];
  const gc = lines.filter((l) => isolate(l) === main);
  console.log(`during the load: ${pauses(gc, 'Mark-Compact')}; ${pauses(gc, 'Scavenge')}; RSS at the end ${(rssBytes(gw.pid) / 1048576).toFixed(1)} MB`);
  await client.close();
  await Promise.all([gw.stop(), up.stop()]);
  if (STORES[store].database === 'postgres') await dropBenchSchemas('mine');
}

runMain('tail', main);
