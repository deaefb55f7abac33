import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { MemoryReport } from './children/child.js';
import { compileChildren } from './lib/compile.js';
import { killAll, useCompiledChildren, type Child } from './lib/children.js';
import { EMBEDDING_MODEL, embeddingsGatewayConfig, gatewayDbPath, startEmbeddingsUpstream, startFloorProxy, startGateway, startSim, videoGatewayConfig, scratchRun } from './lib/setup.js';
import { PathMeter } from './sections/paths.js';
import { seedJobs } from './sections/scale.js';

/**
 * Where each process's resident memory is, after a load: RSS split into anonymous and file-backed
 * pages (/proc/<pid>/smaps_rollup), and the process's own view (V8 heap by space, code, external
 * and array buffers; process.memoryUsage()). What is left of the anonymous pages once V8's heap
 * and code are taken away is native memory: malloc (SQLite's page cache, undici and zlib buffers,
 * better-sqlite3 statements), thread stacks, and the allocator's free but not returned pages.
 *
 *   node --import tsx bench/memory.ts [--only=embeddings,scale] [--seconds=10] [--jobs=100000] [--tree=/other/checkout]
 *
 * `--tree` runs the processes built from another checkout's src/ and bench/children/ (as bench/ab.ts does).
 */
const args = process.argv.slice(2);
const only = (args.find((a) => a.startsWith('--only='))?.slice(7) ?? 'embeddings,scale').split(',');
const seconds = Number(args.find((a) => a.startsWith('--seconds='))?.slice(10) ?? 10);
const jobs = Number(args.find((a) => a.startsWith('--jobs='))?.slice(7) ?? 100_000);
const tree = args.find((a) => a.startsWith('--tree='))?.slice(7);

const run = scratchRun('memory');

const QUIET_MS = 13_000;
const mb = (b: number): string => (b / 2 ** 20).toFixed(1);

function smaps(pid: number): { rss: number; anon: number; file: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  return { rss: kb('Rss'), anon: kb('Anonymous'), file: kb('Rss') - kb('Anonymous') };
}

const rows: string[] = [];
async function record(label: string, child: Child<unknown>): Promise<void> {
  const s = smaps(child.pid);
  const m = (await child.memory!()) as MemoryReport;
  const heap = m.usage.heapTotal;
  const native = s.anon - heap;
  const space = (name: string): string => {
    const x = m.spaces[name] ?? { used: 0, committed: 0 };
    return `${mb(x.used)}/${mb(x.committed)}`;
  };
  rows.push(
    `| ${label} | ${mb(s.rss)} | ${mb(s.file)} | ${mb(s.anon)} | ${mb(heap)} | ${mb(m.usage.heapUsed)} | ${mb(m.afterGc.usage.heapUsed)} | ${space('old_space')} | ${space('new_space')} | ${space('code_space')} | ${space('large_object_space')} | ${mb(m.usage.external)} (${mb(m.usage.arrayBuffers)}) | ${mb(native)} |`,
  );
}

async function embeddings(): Promise<void> {
  const up = await startEmbeddingsUpstream();
  const floor = await startFloorProxy('floor proxy', up.info.url);
  const gw = await startGateway(run, 'gw-mem', embeddingsGatewayConfig(run, 'gw-mem', up.info));
  await record('gateway, started', gw as Child<unknown>);
  const body = JSON.stringify({ model: EMBEDDING_MODEL, input: 'The quick brown fox jumps over the lazy dog while the benchmark measures every hop.' });
  const spec = (key: string) => ({ method: 'POST' as const, path: '/v1/embeddings', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
  const paths: Array<[string, Child<unknown>, PathMeter]> = [
    ['floor proxy', floor as Child<unknown>, new PathMeter({ name: 'floor', origin: floor.info.url, pid: floor.pid, spec: spec(up.info.apiKey) })],
    ['gateway', gw as Child<unknown>, new PathMeter({ name: 'gateway', origin: gw.info.url, pid: gw.pid, spec: spec(gw.info.key) })],
  ];
  for (const [label, child, meter] of paths) {
    await meter.warmUp({ requests: 5_000, maxMs: 15_000 });
    const sat = await meter.closedLoop(32, seconds * 1000);
    await meter.closedLoop(1, 2_000);
    await record(`${label}, after embeddings load (${Math.round(sat.throughput)} req/s, ${Math.round(sat.cpuPerRequest)} us/req at 32 conn)`, child);
    await meter.close();
    // The gateway's SQLite checkpoint worker leaves 10 s after the last write (store/sqlite-checkpointer.ts).
    await new Promise((r) => setTimeout(r, QUIET_MS));
    await record(`${label}, ${QUIET_MS / 1000} s after the load`, child);
  }
  await Promise.all([up, floor, gw].map((c) => c.stop()));
}

async function scale(): Promise<void> {
  const sim = await startSim('sora simulator', { kind: 'sora', taskMs: 24 * 3600 * 1000 });
  const gw = await startGateway(run, 'gw-scale', videoGatewayConfig(run, 'gw-scale', sim.info, 3600_000), true);
  await record('video gateway, started', gw as Child<unknown>);
  const ids = await seedJobs(gatewayDbPath(run, 'gw-scale'), gw.info, jobs);
  await record(`video gateway, ${jobs.toLocaleString('en-US')} jobs written by another process`, gw as Child<unknown>);
  const pick = (): string => `/v1/videos/${ids[Math.floor(Math.random() * ids.length)]!}`;
  const meter = new PathMeter({ name: 'gateway', origin: gw.info.url, pid: gw.pid, spec: { method: 'GET', path: pick, headers: { authorization: `Bearer ${gw.info.key}` } } });
  await meter.warmUp({ requests: 5_000, maxMs: 15_000 });
  await meter.closedLoop(32, seconds * 1000);
  await record('video gateway, after random polls', gw as Child<unknown>);
  await meter.close();
  await Promise.all([sim, gw].map((c) => c.stop()));
}

async function main(): Promise<void> {
  useCompiledChildren(await (tree ? compileChildren(resolve(tree), '-tree') : compileChildren()));
  if (only.includes('embeddings')) await embeddings();
  if (only.includes('scale')) await scale();
  process.stdout.write(
    '| Process (MB) | RSS | file-backed | anonymous | V8 heap committed | V8 heap used | live after full GC | old used/committed | young | code | large objects | external (array buffers) | native (anonymous - V8 heap) |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n',
  );
  process.stdout.write(`${rows.join('\n')}\n`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    killAll();
    process.exit(1);
  },
);
