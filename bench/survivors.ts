import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { option } from './lib/args.js';
import { compileChildren } from './lib/compile.js';
import { heapSites, type HeapProfile as Profile } from './lib/heap-sites.js';
import { runMain, useCompiledChildren, type Child } from './lib/children.js';
import { closedLoop, fixedRate, LoadClient, type RequestSpec } from './lib/load.js';
import { EMBEDDING_MODEL, embeddingsGatewayConfig, gatewayDbPath, startEmbeddingsUpstream, startFloorProxy, startGateway, startSim, scratchRun, videoGatewayConfig } from './lib/setup.js';
import { seedJobs } from './sections/scale.js';
import { dropBenchSchemas, ensureServices, needsServices, parseStores, STORES } from './lib/stores.js';

/**
 * What outlives the young generation per embeddings request, and which lines allocate it. The floor
 * proxy and the gateway run with bench/children/survivor-probe.ts (V8's sampling heap profiler, with
 * an old generation large enough that no full collection falls in the window: what it keeps is
 * what entered the old generation) and with `--trace-gc-nvp` (V8's own count of bytes promoted per
 * scavenge). After 5 s of warm-up, each serves `--rate` requests a second (or `--connections` in a
 * closed loop) for `--seconds`; then per process: bytes promoted per request (V8's count), bytes
 * sampled per request, and the allocation sites with the most of them (the innermost frame, then
 * the innermost frame in this repository's code). `--all` samples everything allocated instead;
 * `--count-only` runs with npm start's flags and no profiler, and prints V8's count alone.
 *
 * `--jobs=N` measures video polls instead: the gateway alone (no floor), its store seeded with N
 * processing jobs (as the bench's scale section does), each poll for one of them at random.
 *
 *   node --import tsx bench/survivors.ts [--rate=1000 | --connections=32] [--seconds=6] [--encoding=float|base64]
 *     [--jobs=100000] [--top=25] [--all | --count-only] [--node-flags="..."] [--keep-log=<file>]
 *     [--store=sqlite|pg|pg-memory|sqlite-redis] (the embeddings gateway's store and limiter; default sqlite)
 * `--keep-log` keeps a copy of the gateway's stdout (access lines and V8's GC trace).
 */
const args = process.argv.slice(2);
const opt = (name: string): string | undefined => option(name, args);
const rate = Number(opt('rate') ?? 1000);
/** `--connections=N`: a closed loop of N connections instead of the fixed rate. */
const connections = opt('connections') ? Number(opt('connections')) : undefined;
const seconds = Number(opt('seconds') ?? 6);
const encoding = opt('encoding') ?? 'float';
const top = Number(opt('top') ?? 25);
/** `--all`: every allocation sampled (what the young generation takes in), not only survivors. */
const all = args.includes('--all');
const flags = (opt('node-flags') ?? '').split(' ').filter(Boolean);
const keepLog = opt('keep-log');
/** `--count-only`: V8's promotion count alone, with npm start's flags and no profiler in the processes. */
const countOnly = args.includes('--count-only');
/** `--jobs=N`: video polls of N stored jobs instead of embeddings. */
const jobs = opt('jobs') ? Number(opt('jobs')) : undefined;
const store = parseStores([`--stores=${opt('store') ?? 'sqlite'}`])[0]!;

const run = scratchRun('survivors');

/** Sends SIGUSR2 to the probe and, when `out` is given, waits for the profile it writes there. */
async function signal(pid: number, out?: string): Promise<Profile | undefined> {
  process.kill(pid, 'SIGUSR2');
  if (!out) return undefined;
  for (let waited = 0; waited < 30_000; waited += 50) {
    if (existsSync(out)) return JSON.parse(readFileSync(out, 'utf8')) as Profile;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no profile from pid ${pid} within 30 s`);
}

/** Bytes V8 says it promoted in the scavenges logged after `from` (`--trace-gc-nvp`'s `promoted=`). */
function promotedSince(logFile: string, from: number): { bytes: number; scavenges: number; markCompacts: number } {
  const lines = readFileSync(logFile, 'utf8').slice(from).split('\n');
  let bytes = 0;
  let scavenges = 0;
  let markCompacts = 0;
  for (const l of lines) {
    if (/gc=s\b/.test(l) || /gc=scavenge/.test(l)) {
      scavenges++;
      bytes += Number(/ promoted=(\d+)/.exec(l)?.[1] ?? 0);
    } else if (/gc=mc\b/.test(l) || /gc=ms\b/.test(l)) markCompacts++;
  }
  return { bytes, scavenges, markCompacts };
}

function print(name: string, profile: Profile, requests: number, v8: ReturnType<typeof promotedSince>): void {
  const s = heapSites(profile);
  const kb = (b: number) => (b / 1024 / requests).toFixed(3);
  console.log(`\n## ${name}: ${requests} requests`);
  console.log(`V8 promoted ${kb(v8.bytes)} KB per request (${v8.scavenges} scavenges, ${v8.markCompacts} mark-compacts); sampled ${all ? 'allocations' : 'survivors'} ${kb(s.total)} KB per request\n`);
  const table = (title: string, m: Map<string, number>): void => {
    console.log(`| ${title} | KB per request | share |`);
    console.log('|---|--:|--:|');
    for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`| ${k.replaceAll('|', '\\|')} | ${kb(v)} | ${((100 * v) / s.total).toFixed(1)}% |`);
    console.log('');
  };
  table('Allocation site (innermost frame)', s.self);
  table('Innermost src/ frame <- allocation site', s.ours);
}

interface LoadPath {
  name: string;
  pid: number;
  out: string;
  log: string;
  client: LoadClient;
  spec: RequestSpec;
}

async function embeddingsPaths(children: Child<unknown>[], probe: string[], withProbe: (out: string) => Record<string, string>): Promise<LoadPath[]> {
  const up = await startEmbeddingsUpstream();
  children.push(up);
  const floorOut = join(run.dir, 'floor.json');
  const floorLog = join(run.dir, 'floor.log');
  const floor = await startFloorProxy('floor proxy', up.info.url, { nodeArgs: probe, env: withProbe(floorOut), logFile: floorLog });
  children.push(floor);
  const gwOut = join(run.dir, 'gateway.json');
  const gw = await startGateway(run, 'gw-survivors', embeddingsGatewayConfig(run, 'gw-survivors', up.info, store), false, undefined, { nodeArgs: probe, env: withProbe(gwOut) });
  children.push(gw);
  const body = JSON.stringify({ model: EMBEDDING_MODEL, input: 'The quick brown fox jumps over the lazy dog while the benchmark measures every hop.', encoding_format: encoding });
  const spec = (token: string): RequestSpec => ({ method: 'POST', path: '/v1/embeddings', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
  return [
    { name: 'floor proxy', pid: floor.pid, out: floorOut, log: floorLog, client: new LoadClient(floor.info.url, connections ?? 64), spec: spec(up.info.apiKey) },
    { name: 'gateway', pid: gw.pid, out: gwOut, log: join(run.dir, 'gw-survivors.log'), client: new LoadClient(gw.info.url, connections ?? 64), spec: spec(gw.info.key) },
  ];
}

async function pollPaths(count: number, children: Child<unknown>[], probe: string[], withProbe: (out: string) => Record<string, string>): Promise<LoadPath[]> {
  // Jobs that never finish upstream, polled by the gateway no sooner than in an hour: every poll is served from the store.
  const sim = await startSim('sora simulator', { kind: 'sora', taskMs: 24 * 3600 * 1000 });
  children.push(sim);
  const gwOut = join(run.dir, 'gateway.json');
  const gw = await startGateway(run, 'gw-polls', videoGatewayConfig(run, 'gw-polls', sim.info, 3600_000), true, undefined, { nodeArgs: probe, env: withProbe(gwOut) });
  children.push(gw);
  const ids = await seedJobs(gatewayDbPath(run, 'gw-polls'), gw.info, count);
  const headers = { authorization: `Bearer ${gw.info.key}` };
  const spec: RequestSpec = { method: 'GET', path: () => `/v1/videos/${ids[Math.floor(Math.random() * ids.length)]!}`, headers };
  return [{ name: 'gateway', pid: gw.pid, out: gwOut, log: join(run.dir, 'gw-polls.log'), client: new LoadClient(gw.info.url, connections ?? 64), spec }];
}

async function main(): Promise<void> {
  const dir = await compileChildren();
  if (!dir) throw new Error('bench/survivors.ts needs esbuild (the probe is loaded as compiled JavaScript)');
  useCompiledChildren(dir);
  // No full collection in the window (see the probe), unless everything allocated is asked for.
  const probe = countOnly
    ? ['--trace-gc-nvp', ...flags]
    : ['--import', join(dir, 'bench', 'children', 'survivor-probe.js'), '--trace-gc-nvp', ...(all ? [] : ['--initial-old-space-size=1024']), ...flags];
  if (needsServices([store])) {
    ensureServices();
    await dropBenchSchemas('stale');
  }
  const children: Child<unknown>[] = [];
  const withProbe = (out: string): Record<string, string> => ({ BENCH_SURVIVOR_OUT: out, BENCH_SURVIVOR_ALL: all ? '1' : '0' });
  const paths = jobs ? await pollPaths(jobs, children, probe, withProbe) : await embeddingsPaths(children, probe, withProbe);
  const load = (p: LoadPath, durationMs: number) =>
    connections ? closedLoop(p.client, p.spec, { workers: connections, durationMs }) : fixedRate(p.client, p.spec, { rate, durationMs });
  const what = jobs ? `Video polls of ${jobs.toLocaleString('en-US')} stored jobs` : `Embeddings (${encoding})`;
  console.log(`${what} ${connections ? `at ${connections} connections` : `at ${rate} req/s`} for ${seconds} s, after 5 s of warm-up`);
  for (const p of paths) {
    await load(p, 5_000);
    const from = readFileSync(p.log, 'utf8').length;
    if (!countOnly) await signal(p.pid);
    const res = await load(p, seconds * 1000);
    if (res.ok === 0) throw new Error(`${p.name}: no request succeeded`);
    const profile = countOnly ? undefined : await signal(p.pid, p.out);
    const sorted = [...res.latenciesMs].sort((a, b) => a - b);
    const q = (x: number) => sorted[Math.floor(x * (sorted.length - 1))]!.toFixed(2);
    console.log(`\n${p.name}: ${((res.ok * 1000) / res.elapsedMs).toFixed(0)} req/s, latency p50 ${q(0.5)}, p90 ${q(0.9)}, p99 ${q(0.99)}, max ${q(1)} ms`);
    const v8 = promotedSince(p.log, from);
    if (profile) print(p.name, profile, res.ok, v8);
    else console.log(`V8 promoted ${(v8.bytes / 1024 / res.ok).toFixed(3)} KB per request (${v8.scavenges} scavenges, ${v8.markCompacts} mark-compacts)`);
    await p.client.close();
  }
  await Promise.all(children.map((c) => c.stop()));
  if (keepLog) copyFileSync(paths[paths.length - 1]!.log, keepLog);
  if (STORES[store].database === 'postgres') await dropBenchSchemas('mine');
}

runMain('survivors', main);
