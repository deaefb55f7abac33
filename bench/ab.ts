import { basename, resolve } from 'node:path';
import { join } from 'node:path';
import { option } from './lib/args.js';
import { compileChildren } from './lib/compile.js';
import { runMain, useCompiledChildren, type Child } from './lib/children.js';
import { peakRssBytes, rssBytes } from './lib/proc.js';
import { EMBEDDING_MODEL, embeddingsGatewayConfig, startEmbeddingsUpstream, startFloorProxy, startGateway, startSim, videoGatewayConfig, scratchRun } from './lib/setup.js';
import { dropBenchSchemas, ensureServices, needsServices, STORES, type StoreName } from './lib/stores.js';
import type { RequestSpec } from './lib/load.js';
import { PathMeter } from './sections/paths.js';
import { checkProcessing } from './sections/polls.js';
import { createVideoJob } from './sections/video-jobs.js';
import { mayHoldShape } from '../src/core/redact.js';

/**
 * Before and after, side by side: the embeddings gateway built from each named checkout (its src/
 * and bench/children/, this checkout's node_modules), plus the floor proxy, driven in rotating order
 * round after round, so drift on a shared machine hits every tree alike. Per tree: medians of CPU
 * per request (32 connections and 1 connection), p50 at one connection; ratios
 * to the first tree and to the floor proxy; RSS right after the 32-connection phase (median of the
 * rounds) and the peak (VmHWM) over the whole run. On SQLite with the in-process limiter, as the main table,
 * unless `--store=` names another of bench/lib/stores.ts's stores (`pg`: PostgreSQL + Redis limiter).
 * `--section=polls` measures GET /v1/videos/{id} of a job that stays processing instead (each tree's
 * video gateway answers from its store; the floor proxy asks the Sora simulator), as the bench's
 * polls section does.
 *
 *   node --import tsx bench/ab.ts --trees=/old/checkout,. [--rounds=5] [--seconds=3] [--encoding=float|base64]
 *     [--section=embeddings|polls] [--store=sqlite|pg|pg-memory|sqlite-redis]
 */
const args = process.argv.slice(2);
const opt = (name: string): string | undefined => option(name, args);
const trees = (opt('trees') ?? '.').split(',').map((t) => resolve(t));
const rounds = Number(opt('rounds') ?? 5);
const seconds = Number(opt('seconds') ?? 3);
const encoding = opt('encoding') ?? 'float';
const sectionName = opt('section') ?? 'embeddings';
if (sectionName !== 'embeddings' && sectionName !== 'polls') throw new Error(`--section: embeddings or polls, not ${sectionName}`);
const store = (opt('store') ?? 'sqlite') as StoreName;
if (!(store in STORES)) throw new Error(`--store: unknown store ${store} (known: ${Object.keys(STORES).join(', ')})`);

const run = scratchRun('ab');

interface Figures {
  cpu32: number[];
  cpu1: number[];
  p50one: number[];
  /** RSS right after each round's 32-connection phase. */
  rss: number[];
  pid: number;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** What each tree's gateway and the floor proxy are asked, per section. */
interface Section {
  title: string;
  /** Asked after every gateway started (the polls floor polls the first gateway's task). */
  floor(): { url: string; pid: number; spec: RequestSpec };
  /** Starts tree i's gateway (from its compiled children) and returns what to ask it. */
  gateway(i: number, dir: string | undefined): Promise<{ url: string; pid: number; spec: RequestSpec }>;
}

async function embeddingsSection(children: Child<unknown>[]): Promise<Section> {
  const up = await startEmbeddingsUpstream();
  children.push(up);
  const floor = await startFloorProxy('floor proxy', up.info.url);
  children.push(floor);
  const body = JSON.stringify({ model: EMBEDDING_MODEL, input: 'The quick brown fox jumps over the lazy dog while the benchmark measures every hop.', encoding_format: encoding });
  const spec = (token: string): RequestSpec => ({ method: 'POST', path: '/v1/embeddings', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
  return {
    title: `Embeddings (${encoding})`,
    floor: () => ({ url: floor.info.url, pid: floor.pid, spec: spec(up.info.apiKey) }),
    async gateway(i, dir) {
      const name = `gw-ab-${i}`;
      const gw = await startGateway(run, name, embeddingsGatewayConfig(run, name, up.info, store), false, dir);
      children.push(gw);
      return { url: gw.info.url, pid: gw.pid, spec: spec(gw.info.key) };
    },
  };
}

/** A job that stays processing for a day; gateways refresh it an hour apart, so polls are answered from the store. */
async function pollsSection(children: Child<unknown>[]): Promise<Section> {
  const sim = await startSim('sora simulator', { kind: 'sora', taskMs: 24 * 3600 * 1000 });
  children.push(sim);
  const floor = await startFloorProxy('floor proxy', sim.info.url);
  children.push(floor);
  const spec = (path: string, token: string): RequestSpec => ({ method: 'GET', path, headers: { authorization: `Bearer ${token}` } });
  // The floor proxy polls the first gateway's task on the simulator, as the bench's polls section does.
  let taskId: string | undefined;
  return {
    title: `Video polls (GET /v1/videos/{id} of a processing job)`,
    floor: () => ({ url: floor.info.url, pid: floor.pid, spec: spec(`/v1/videos/${taskId!}`, sim.info.apiKey) }),
    async gateway(i, dir) {
      const name = `gw-ab-${i}`;
      const gw = await startGateway(run, name, videoGatewayConfig(run, name, sim.info, 3600_000, store), true, dir);
      children.push(gw);
      const job = await createVideoJob(gw.info);
      await checkProcessing(gw.info, job.id);
      taskId ??= job.taskId;
      // An access line the redactor's pre-check (this checkout's) lets through costs less to log: each
      // gateway polls its own job, so whether its id trips the pre-check is luck, worth knowing.
      const trips = mayHoldShape(`"path":"/v1/videos/${job.id}",`);
      process.stderr.write(`tree ${i + 1}: job id of ${job.id.length} characters${trips ? ', trips the log redactor\'s pre-check' : ''}\n`);
      return { url: gw.info.url, pid: gw.pid, spec: spec(`/v1/videos/${job.id}`, gw.info.key) };
    },
  };
}

async function main(): Promise<void> {
  useCompiledChildren(await compileChildren());
  if (needsServices([store])) {
    ensureServices();
    await dropBenchSchemas('stale');
  }
  const children: Child<unknown>[] = [];
  const section = sectionName === 'polls' ? await pollsSection(children) : await embeddingsSection(children);
  const meters = new Map<string, PathMeter>();
  const figures = new Map<string, Figures>();
  const gateways = new Map<string, PathMeter>();
  for (const [i, tree] of trees.entries()) {
    const label = `${i + 1}: ${basename(tree)}`;
    const dir = await compileChildren(tree, `-ab${i}`);
    const gw = await section.gateway(i, dir);
    gateways.set(label, new PathMeter({ name: 'gateway', label, origin: gw.url, pid: gw.pid, spec: gw.spec }));
    figures.set(label, { cpu32: [], cpu1: [], p50one: [], rss: [], pid: gw.pid });
  }
  const floor = section.floor();
  meters.set('floor proxy', new PathMeter({ name: 'floor', origin: floor.url, pid: floor.pid, spec: floor.spec }));
  figures.set('floor proxy', { cpu32: [], cpu1: [], p50one: [], rss: [], pid: floor.pid });
  for (const [label, m] of gateways) meters.set(label, m);
  const names = [...meters.keys()];
  for (const n of names) await meters.get(n)!.warmUp({ requests: 5_000, maxMs: 10_000 });
  for (let r = 0; r < rounds; r++) {
    const order = names.map((_, i) => names[(i + r) % names.length]!);
    for (const n of order) {
      const f = figures.get(n)!;
      const many = await meters.get(n)!.closedLoop(32, seconds * 1000);
      f.rss.push(rssBytes(f.pid));
      const one = await meters.get(n)!.closedLoop(1, seconds * 1000);
      f.cpu32.push(many.cpuPerRequest);
      f.cpu1.push(one.cpuPerRequest);
      f.p50one.push(one.summary.p50);
      process.stderr.write(`round ${r + 1}, ${n}: 32 conn ${many.cpuPerRequest.toFixed(0)} us/req, 1 conn ${one.cpuPerRequest.toFixed(0)} us/req, p50 ${one.summary.p50.toFixed(3)} ms (${many.failed + one.failed} failed)\n`);
    }
  }
  const floorF = figures.get('floor proxy')!;
  const first = figures.get(names[1]!)!;
  console.log(`${section.title}, ${STORES[store].label}, ${rounds} rounds of ${seconds} s per phase, medians:\n`);
  console.log('| Path | CPU/req 32 conn (us) | / floor | / tree 1 | CPU/req 1 conn (us) | / floor | / tree 1 | p50 1 conn (ms) | RSS after 32 conn (MB) | peak RSS (MB) |');
  console.log('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const n of names) {
    const f = figures.get(n)!;
    const c32 = median(f.cpu32);
    const c1 = median(f.cpu1);
    const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
    console.log(`| ${n} | ${c32.toFixed(0)} | ${ratio(c32, median(floorF.cpu32))} | ${ratio(c32, median(first.cpu32))} | ${c1.toFixed(0)} | ${ratio(c1, median(floorF.cpu1))} | ${ratio(c1, median(first.cpu1))} | ${median(f.p50one).toFixed(3)} | ${(median(f.rss) / 1048576).toFixed(1)} | ${(peakRssBytes(f.pid) / 1048576).toFixed(1)} |`);
  }
  await Promise.all([...meters.values()].map((m) => m.close()));
  await Promise.all(children.map((c) => c.stop()));
  if (STORES[store].database === 'postgres') await dropBenchSchemas('mine');
}

runMain('ab', main);
