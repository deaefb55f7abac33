import { copyFileSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { wallNow, watchLoopGaps, type LoopGap } from './children/loop-gaps.js';
import type { StallRecord } from './children/stall-probe.js';
import { option } from './lib/args.js';
import { compileChildren } from './lib/compile.js';
import { runMain, useCompiledChildren, type Child } from './lib/children.js';
import { LoadClient, type RequestSpec } from './lib/load.js';
import { rssBytes } from './lib/proc.js';
import { EMBEDDING_MODEL, embeddingsGatewayConfig, startEmbeddingsUpstream, startFloorProxy, startGateway, scratchRun } from './lib/setup.js';
import { attribute, CAUSES, duringRestart, type Cause, type Request } from './lib/stalls.js';
import { dropBenchSchemas, ensureServices, needsServices, STORES, type StoreName } from './lib/stores.js';

/**
 * Where the embeddings tail at a fixed rate comes from. The floor proxy and one gateway per named
 * checkout (`--trees`, or `--tree` for one; SQLite unless `--store=` names another of
 * bench/lib/stores.ts's; started as `npm start` starts it, plus `--node-flags`), each with
 * bench/children/stall-probe.ts loaded, serve an open loop of `--rate` requests a second for
 * `--seconds` (request i due at start + i/rate, latency from that due time), in rotating order for
 * `--rounds`. Per path: latency percentiles (medians over the rounds), the main thread's GC pauses
 * and SQLite transactions meanwhile, and the slowest 1% of requests put on causes (bench/lib/stalls.ts:
 * GC pause, SQLite transaction, other main-thread work, the main thread waiting for a CPU, the load
 * generator itself stalled, nothing seen). `--idle-ms=N` leaves the servers idle for N ms before
 * each measured load, as the full bench does (its gateways wait while the other paths run their
 * phases): caches and pooled connections that expire meanwhile show up at the start.
 *
 *   node --import tsx bench/tail.ts [--trees=/old/checkout,. | --tree=.] [--rounds=3] [--rate=1000] [--seconds=8 | --requests=8000]
 *     [--store=sqlite|pg|pg-memory|sqlite-redis] [--encoding=float|base64] [--idle-ms=0]
 *     [--node-flags="--heap-growing-percent=100"] [--keep-log=<file>]
 * `--keep-log` keeps a copy of the last gateway's stdout (access lines, and V8's traces if flags ask for them).
 */
const args = process.argv.slice(2);
const opt = (name: string): string | undefined => option(name, args);
const trees = (opt('trees') ?? opt('tree') ?? '.').split(',').map((t) => resolve(t));
const rounds = Number(opt('rounds') ?? 1);
const rate = Number(opt('rate') ?? 1000);
const seconds = opt('requests') ? Number(opt('requests')) / rate : Number(opt('seconds') ?? 8);
const store = (opt('store') ?? 'sqlite') as StoreName;
if (!(store in STORES)) throw new Error(`--store: unknown store ${store} (known: ${Object.keys(STORES).join(', ')})`);
const idleMs = Number(opt('idle-ms') ?? 0);
const encoding = opt('encoding') ?? 'float';
const flags = (opt('node-flags') ?? '').split(' ').filter(Boolean);
const keepLog = opt('keep-log');

const run = scratchRun('tail');

interface Path {
  name: string;
  pid: number;
  client: LoadClient;
  spec: RequestSpec;
  out: string;
  log?: string;
  rounds: Array<{ sorted: number[]; slow: Request[]; record: StallRecord; clientGaps: LoopGap[] }>;
}

/** Request i due at start + i/rate (a timer tick sends every request due by then); due and done times, wall-clock ms. */
function openLoop(client: LoadClient, spec: RequestSpec): Promise<Request[]> {
  const total = Math.round(rate * seconds);
  const t0 = wallNow() + 5;
  const out: Request[] = [];
  return new Promise((done, fail) => {
    let sent = 0;
    const tick = (): void => {
      for (const now = wallNow(); sent < total && t0 + (sent * 1000) / rate <= now; sent++) {
        const due = t0 + (sent * 1000) / rate;
        client.send(spec, sent).then(() => {
          out.push({ due, done: wallNow() });
          if (out.length === total) done(out);
        }, fail);
      }
      if (sent < total) setTimeout(tick, Math.max(0, t0 + (sent * 1000) / rate - wallNow()));
    };
    tick();
  });
}

/** Asks a probe for its record since the last ask (it starts over), and waits for it. */
async function report(p: Path): Promise<StallRecord> {
  rmSync(p.out, { force: true });
  process.kill(p.pid, 'SIGUSR2');
  for (let waited = 0; waited < 10_000; waited += 20) {
    if (existsSync(p.out)) return JSON.parse(readFileSync(p.out, 'utf8')) as StallRecord;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${p.name}: no stall record within 10 s`);
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const pct = (sorted: number[], q: number): number => sorted[Math.floor(q * (sorted.length - 1))]!;

function printTables(paths: Path[]): void {
  console.log(`Embeddings (${encoding}), ${STORES[store].label}, at ${rate} req/s, ${seconds} s per path and round${idleMs > 0 ? ` after ${idleMs} ms idle` : ''}, ${rounds} round(s); node flags: ${flags.join(' ') || '(npm start\'s)'}\n`);
  console.log('| Path | p50 | p90 | p99 | p99.9 | max (ms) | scavenges: n, ms, largest | mark-compacts: n, ms, largest | SQLite transactions: n, mean, largest (ms) | RSS at end (MB) |');
  console.log('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const p of paths) {
    const q = (x: number) => median(p.rounds.map((r) => pct(r.sorted, x))).toFixed(2);
    const gc = (kind: string) => {
      const ms = p.rounds.flatMap((r) => r.record.gc.filter((g) => g.kind === kind).map((g) => g.ms));
      return `${ms.length}, ${ms.reduce((a, b) => a + b, 0).toFixed(0)}, ${Math.max(0, ...ms).toFixed(1)}`;
    };
    const tx = p.rounds.flatMap((r) => r.record.commits.map((c) => c.ms));
    const txCell = tx.length ? `${tx.length}, ${(tx.reduce((a, b) => a + b, 0) / tx.length).toFixed(2)}, ${Math.max(...tx).toFixed(1)}` : '';
    console.log(`| ${p.name} | ${q(0.5)} | ${q(0.9)} | ${q(0.99)} | ${q(0.999)} | ${q(1)} | ${gc('minor')} | ${gc('major')} | ${txCell} | ${(rssBytes(p.pid) / 1048576).toFixed(1)} |`);
  }
  console.log('\nThe slowest 1% of requests (all rounds): how many had each main cause, and the mean ms of each cause overlapping them\n');
  console.log(`| Path | ${CAUSES.join(' | ')} | during a RESTART |`);
  console.log(`|---|${CAUSES.map(() => '--:|').join('')}--:|`);
  for (const p of paths) {
    const totals = new Map<Cause, { requests: number; ms: number }>(CAUSES.map((c) => [c, { requests: 0, ms: 0 }]));
    let n = 0;
    let restart = 0;
    for (const r of p.rounds) {
      for (const [c, v] of attribute(r.slow, r.record, r.clientGaps)) {
        totals.get(c)!.requests += v.requests;
        totals.get(c)!.ms += v.meanMs * r.slow.length;
      }
      n += r.slow.length;
      restart += duringRestart(r.slow, r.record);
    }
    const cells = CAUSES.map((c) => `${totals.get(c)!.requests} (${(totals.get(c)!.ms / Math.max(1, n)).toFixed(1)} ms)`);
    console.log(`| ${p.name} | ${cells.join(' | ')} | ${restart} |`);
  }
  console.log('\nPer path, all rounds: the server\'s RESTART checkpoints (each: ms the statements were held), and loop gaps over 3 ms (n, ms in all, of which on a CPU / waiting for one) of the server and of the load generator\n');
  for (const p of paths) {
    const restarts = p.rounds.flatMap((r) => r.record.restarts.map((x) => x.ms.toFixed(1)));
    const gaps = (list: LoopGap[]) => {
      const sum = (f: (g: LoopGap) => number) => list.reduce((a, g) => a + f(g), 0).toFixed(0);
      return `${list.length}, ${sum((g) => g.ms)} ms (${sum((g) => g.cpuMs)} / ${sum((g) => g.waitMs)})`;
    };
    console.log(`- ${p.name}: RESTARTs ${restarts.length ? restarts.join(', ') + ' ms' : 'none'}; server gaps ${gaps(p.rounds.flatMap((r) => r.record.gaps))}; load generator gaps ${gaps(p.rounds.flatMap((r) => r.clientGaps))}`);
  }
}

async function main(): Promise<void> {
  const dir = await compileChildren();
  if (!dir) throw new Error('bench/tail.ts needs esbuild (the probe is loaded as compiled JavaScript)');
  useCompiledChildren(dir);
  if (needsServices([store])) {
    ensureServices();
    await dropBenchSchemas('stale');
  }
  const probe = join(dir, 'bench', 'children', 'stall-probe.js');
  const children: Child<unknown>[] = [];
  const up = await startEmbeddingsUpstream();
  children.push(up);
  const body = JSON.stringify({ model: EMBEDDING_MODEL, input: 'The quick brown fox jumps over the lazy dog while the benchmark measures every hop.', encoding_format: encoding });
  const spec = (token: string): RequestSpec => ({ method: 'POST', path: '/v1/embeddings', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
  const paths: Path[] = [];
  const floorOut = join(run.dir, 'floor.json');
  const floor = await startFloorProxy('floor proxy', up.info.url, { nodeArgs: ['--import', probe, ...flags], env: { BENCH_STALL_OUT: floorOut } });
  children.push(floor);
  paths.push({ name: 'floor proxy', pid: floor.pid, client: new LoadClient(floor.info.url, 64), spec: spec(up.info.apiKey), out: floorOut, rounds: [] });
  for (const [i, tree] of trees.entries()) {
    const name = `gw-tail-${i}`;
    const out = join(run.dir, `${name}.json`);
    const treeDir = trees.length === 1 && tree === resolve('.') ? undefined : await compileChildren(tree, `-tail${i}`);
    const gw = await startGateway(run, name, embeddingsGatewayConfig(run, name, up.info, store), false, treeDir, { nodeArgs: ['--import', probe, ...flags], env: { BENCH_STALL_OUT: out } });
    children.push(gw);
    const label = trees.length === 1 ? 'gateway' : `gateway ${i + 1}: ${basename(tree)}`;
    paths.push({ name: label, pid: gw.pid, client: new LoadClient(gw.info.url, 64), spec: spec(gw.info.key), out, log: join(run.dir, `${name}.log`), rounds: [] });
  }
  const loop = watchLoopGaps();
  for (const p of paths) for (let i = 0; i < 5_000; i++) await p.client.send(p.spec, i);
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < paths.length; k++) {
      const p = paths[(k + r) % paths.length]!;
      if (idleMs > 0) await new Promise((r) => setTimeout(r, idleMs));
      await report(p);
      loop.take();
      const requests = await openLoop(p.client, p.spec);
      const record = await report(p);
      const sorted = requests.map((q) => q.done - q.due).sort((a, b) => a - b);
      const p99 = pct(sorted, 0.99);
      const slow = requests.filter((q) => q.done - q.due >= p99);
      p.rounds.push({ sorted, slow, record, clientGaps: loop.take() });
      process.stderr.write(`round ${r + 1}, ${p.name}: p50 ${pct(sorted, 0.5).toFixed(2)}, p99 ${p99.toFixed(2)} ms\n`);
    }
  }
  loop.stop();
  printTables(paths);
  await Promise.all(paths.map((p) => p.client.close()));
  await Promise.all(children.map((c) => c.stop()));
  const last = paths[paths.length - 1]!;
  if (keepLog && last.log) copyFileSync(last.log, keepLog);
  if (STORES[store].database === 'postgres') await dropBenchSchemas('mine');
}

runMain('tail', main);
