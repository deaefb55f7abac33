import { join } from 'node:path';
import { compileChildren } from './lib/compile.js';
import { runMain, useCompiledChildren, type Child } from './lib/children.js';
import { embeddingsGatewayConfig, startEmbeddingsUpstream, startFloorProxy, startGateway, scratchRun } from './lib/setup.js';
import { dropBenchSchemas, ensureServices, needsServices, parseStores, STORES } from './lib/stores.js';
import { PathMeter } from './sections/paths.js';
import { cpuMicros } from './lib/proc.js';
import { redisServerPid } from './lib/stores.js';
import { EMBEDDING_MODEL } from './lib/setup.js';

/**
 * The store comparison alone, for attributing the PostgreSQL path's costs: the embeddings gateway on
 * each named store and the floor proxy, 32 connections closed loop, `--rounds` times in turn (the
 * order rotates each round, so drift on a shared machine hits every store alike). Prints per store
 * the median over rounds of throughput, p50 and CPU per request of the serving process, and of the
 * Redis server's CPU per request (it shares the machine's cores with everything else here).
 *
 *   node --import tsx bench/stores.ts [--stores=sqlite,pg,pg-memory,sqlite-redis] [--rounds=3] [--seconds=3]
 */
const args = process.argv.slice(2);
const stores = parseStores(args.some((a) => a.startsWith('--stores=')) ? args : ['--stores=sqlite,pg,pg-memory']);
const rounds = Number(args.find((a) => a.startsWith('--rounds='))?.slice(9) ?? 3);
const seconds = Number(args.find((a) => a.startsWith('--seconds='))?.slice(10) ?? 3);
const profile = args.includes('--profile');

const run = scratchRun('stores', profile ? join(process.cwd(), 'bench/results/profiles') : undefined);

interface Figures {
  throughput: number[];
  p50: number[];
  cpu: number[];
  /** The Redis server's CPU per request of the phase (it shares the cores; other users of it add noise). */
  redisCpu: number[];
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  useCompiledChildren(await compileChildren());
  if (needsServices(stores)) {
    ensureServices();
    await dropBenchSchemas('stale');
  }
  const up = await startEmbeddingsUpstream();
  const children: Child<unknown>[] = [up];
  const floor = await startFloorProxy('floor proxy', up.info.url);
  children.push(floor);
  const body = JSON.stringify({ model: EMBEDDING_MODEL, input: 'The quick brown fox jumps over the lazy dog while the benchmark measures every hop.' });
  const meters = new Map<string, PathMeter>();
  meters.set('floor proxy', new PathMeter({ name: 'floor', origin: floor.info.url, pid: floor.pid, spec: { method: 'POST', path: '/v1/embeddings', headers: { authorization: `Bearer ${up.info.apiKey}`, 'content-type': 'application/json' }, body } }));
  for (const store of stores) {
    const name = `gw-stores-${store}`;
    const gw = await startGateway(run, name, embeddingsGatewayConfig(run, name, up.info, store));
    children.push(gw);
    meters.set(STORES[store].label, new PathMeter({ name: 'gateway', label: store, origin: gw.info.url, pid: gw.pid, spec: { method: 'POST', path: '/v1/embeddings', headers: { authorization: `Bearer ${gw.info.key}`, 'content-type': 'application/json' }, body } }));
  }
  const names = [...meters.keys()];
  for (const n of names) await meters.get(n)!.warmUp({ requests: 5_000, maxMs: 10_000 });
  const figures = new Map<string, Figures>(names.map((n) => [n, { throughput: [], p50: [], cpu: [], redisCpu: [] }]));
  const redisPid = needsServices(stores) ? await redisServerPid() : undefined;
  for (let r = 0; r < rounds; r++) {
    const order = names.map((_, i) => names[(i + r) % names.length]!);
    for (const n of order) {
      const redis0 = redisPid ? cpuMicros(redisPid) : 0;
      const res = await meters.get(n)!.closedLoop(32, seconds * 1000);
      const redisCpu = redisPid ? (cpuMicros(redisPid) - redis0) / Math.max(1, res.ok) : NaN;
      const f = figures.get(n)!;
      f.throughput.push(res.throughput);
      f.p50.push(res.summary.p50);
      f.cpu.push(res.cpuPerRequest);
      f.redisCpu.push(redisCpu);
      process.stderr.write(`round ${r + 1}, ${n}: ${Math.round(res.throughput)} req/s, p50 ${res.summary.p50.toFixed(2)} ms, ${res.cpuPerRequest.toFixed(0)} us/req, Redis ${redisCpu.toFixed(0)} us/req (${res.ok} ok, ${res.failed} failed)\n`);
    }
  }
  const floorCpu = median(figures.get('floor proxy')!.cpu);
  const sqlite = figures.get(STORES.sqlite.label);
  console.log('| Path | req/s, 32 conn | p50 (ms) | CPU per request (us) | CPU / floor | req/s / SQLite | Redis server CPU per request (us) |');
  console.log('|---|--:|--:|--:|--:|--:|--:|');
  for (const n of names) {
    const f = figures.get(n)!;
    const t = median(f.throughput);
    const ratio = sqlite && n !== 'floor proxy' ? `${(t / median(sqlite.throughput)).toFixed(2)}x` : '';
    const redisCpu = redisPid ? Math.round(median(f.redisCpu)) : '';
    console.log(`| ${n} | ${Math.round(t).toLocaleString('en-US')} | ${median(f.p50).toFixed(2)} | ${Math.round(median(f.cpu))} | ${(median(f.cpu) / floorCpu).toFixed(2)}x | ${ratio} | ${redisCpu} |`);
  }
  await Promise.all([...meters.values()].map((m) => m.close()));
  await Promise.all(children.map((c) => c.stop()));
  if (stores.some((s) => STORES[s].database === 'postgres')) await dropBenchSchemas('mine');
}

runMain('stores', main);
