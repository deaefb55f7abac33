import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileChildren } from './lib/compile.js';
import { killAll, onExit, startChild, useCompiledChildren, type Child } from './lib/children.js';
import type { SimChildInfo } from './children/sim.js';
import {
  embeddingsGatewayConfig,
  gatewayDbPath,
  startEmbeddingsUpstream,
  startFloorProxy,
  startGateway,
  startSim,
  videoGatewayConfig,
  type BenchRun,
} from './lib/setup.js';
import { ForeignLoad } from './lib/proc.js';
import { startNginx, startPortkey, type Peer, type PeerStatus } from './lib/peers.js';
import { describeMachine, machine, renderTable, renderTargets, type Row } from './lib/table.js';
import { dropBenchSchemas, ensureServices, needsServices, parseStores, STORES } from './lib/stores.js';
import { renderStoreTable, type OtherStore, type StoreFigures } from './sections/stores.js';
import { benchDownload, MB } from './sections/download.js';
import { benchEmbeddings, type Endpoint, type EmbeddingsPhases } from './sections/embeddings.js';
import type { PathName } from './sections/paths.js';
import { benchPolls, checkProcessing, type PollPhases } from './sections/polls.js';
import { benchScale } from './sections/scale.js';
import { createVideoJob, waitForStatus } from './sections/video-jobs.js';

/**
 * `npm run bench [-- --quick] [-- --profile] [-- --upstream=sim]`: every section on loopback, one
 * table on stdout and in bench/results/. Each child process is stopped at the end, on error and on
 * SIGINT; every phase has its own cap and the whole run has one too.
 *
 * --profile        runs the gateways with --cpu-prof (profiles in bench/results/profiles/)
 * --upstream=sim   uses src/embeddings/vendors/openai's simulator as the embeddings upstream
 * --tsx            runs the children under tsx instead of transpiling them first (bench/lib/compile.ts)
 * --only=a,b       runs only these sections (embeddings, polls, scale, download)
 * --peers          adds Portkey OSS and nginx (bench/lib/peers.ts) as columns of the embeddings rows
 *                  (both encodings in a full run; float only with --quick, to stay within its cap)
 * --stores=a,b     the stores the embeddings and polls gateways run on, side by side (default
 *                  sqlite,pg; also pg-memory, sqlite-redis); the first one is the main table's gateway
 */
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const profile = args.includes('--profile');
const useSim = args.includes('--upstream=sim');
const only = args.find((a) => a.startsWith('--only='))?.slice(7).split(',');
const withPeers = args.includes('--peers');
const wants = (s: string): boolean => !only || only.includes(s);
const stores = parseStores(args);
const mainStore = stores[0]!;

const P = quick
  ? {
      emb: { warm: { requests: 3_000, maxMs: 2_000 }, oneConnMs: 700, rateMs: 1_000, saturationMs: 800, rounds: 1 } satisfies EmbeddingsPhases,
      polls: { warm: { requests: 4_000, maxMs: 2_000 }, saturationMs: 800, rateMs: 1_000, rounds: 1 } satisfies PollPhases,
      jobs: 100_000,
      downloadBytes: 200 * MB,
      downloadRepeats: 1,
      capMs: 120_000,
    }
  : {
      emb: { warm: { requests: 10_000, maxMs: 6_000 }, oneConnMs: 2_000, rateMs: 5_000, saturationMs: 2_500, rounds: 3 } satisfies EmbeddingsPhases,
      polls: { warm: { requests: 10_000, maxMs: 5_000 }, saturationMs: 1_500, rateMs: 5_000, rounds: 3 } satisfies PollPhases,
      jobs: 100_000,
      downloadBytes: 200 * MB,
      downloadRepeats: 3,
      capMs: 15 * 60_000,
    };

const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
const started = performance.now();
const log = (line: string): void => {
  process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(1).padStart(5)} s] ${line}\n`);
};

// The whole run is bounded even if a cap inside a phase somehow fails to fire. `--cap-s=N` moves the
// bound for a machine so busy that starting the processes alone takes minutes.
const capArg = Number(args.find((a) => a.startsWith('--cap-s='))?.slice('--cap-s='.length));
if (Number.isFinite(capArg) && capArg > 0) P.capMs = capArg * 1000;
setTimeout(() => {
  process.stderr.write(`bench: the run exceeded its ${P.capMs / 1000} s cap; stopping\n`);
  killAll();
  process.exit(2);
}, P.capMs).unref();

const run: BenchRun = {
  dir: mkdtempSync(join(tmpdir(), 'gw-bench-')),
  profileDir: profile ? join(resultsDir, 'profiles') : undefined,
};
onExit(() => rmSync(run.dir, { recursive: true, force: true }));

const load = new ForeignLoad();
/** The transpiled children's directory, or undefined when they run under tsx. */
let runtime: string | undefined;

function endpoint(c: Child<{ url: string }>, token: string): Endpoint {
  return { origin: c.info.url, pid: c.pid, token };
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  const storeRows: StoreFigures[] = [];
  const notes: string[] = [];
  const children: Child<unknown>[] = [];
  const keep = (c: Child<unknown>): void => void children.push(c);

  runtime = args.includes('--tsx') ? undefined : await compileChildren();
  useCompiledChildren(runtime);
  log(`starting processes (${quick ? 'quick' : 'full'} run, ${runtime ? 'transpiled children' : 'children under tsx'}; stores: ${stores.join(', ')})`);
  if (needsServices(stores)) {
    ensureServices();
    const stale = await dropBenchSchemas('stale');
    if (stale.length > 0) log(`dropped ${stale.length} schema(s) left by earlier runs`);
  }
  const [embUp, soraPoll, soraDl] = await Promise.all([
    useSim ? startChild<SimChildInfo>('openai simulator', 'sim.ts', { kind: 'openai' }) : startEmbeddingsUpstream(),
    startSim('sora simulator (polls)', { kind: 'sora', taskMs: 24 * 3600 * 1000 }),
    startSim('sora simulator (downloads)', { kind: 'sora', taskMs: 0, videoBytes: P.downloadBytes }),
  ]);
  [embUp, soraPoll, soraDl].forEach(keep);
  const embInfo = embUp.info as { url: string; apiKey: string };
  const [floorEmb, floorPoll, floorDl, gwEmb, gwVideo, gwDl] = await Promise.all([
    startFloorProxy('floor proxy (embeddings)', embInfo.url),
    startFloorProxy('floor proxy (polls)', soraPoll.info.url),
    startFloorProxy('floor proxy (downloads)', soraDl.info.url),
    startGateway(run, 'gw-embeddings', embeddingsGatewayConfig(run, 'gw-embeddings', embInfo, mainStore)),
    // Refreshes an hour apart: polls are answered from the store; the refresher runs as in production.
    startGateway(run, 'gw-video', videoGatewayConfig(run, 'gw-video', soraPoll.info, 3600_000, mainStore), true),
    startGateway(run, 'gw-download', videoGatewayConfig(run, 'gw-download', soraDl.info, 0)),
  ]);
  [floorEmb, floorPoll, floorDl, gwEmb, gwVideo, gwDl].forEach(keep);
  // The same embeddings and poll gateways on every other store named by --stores.
  const otherGateways = await Promise.all(
    stores.slice(1).map(async (store) => {
      const [emb, video] = await Promise.all([
        startGateway(run, `gw-embeddings-${store}`, embeddingsGatewayConfig(run, `gw-embeddings-${store}`, embInfo, store)),
        startGateway(run, `gw-video-${store}`, videoGatewayConfig(run, `gw-video-${store}`, soraPoll.info, 3600_000, store), true),
      ]);
      keep(emb);
      keep(video);
      return { store, emb, video };
    }),
  );
  // Peers start after ours (a first Portkey install takes a while); one that fails is a "not run" column.
  const peerStatus: PeerStatus[] = withPeers && wants('embeddings')
    ? await Promise.all([startPortkey(embInfo, run.dir, log), startNginx(embInfo, run.dir)])
    : [];
  const peers: Peer[] = [];
  for (const p of peerStatus) {
    if (p.peer) {
      peers.push(p.peer);
      keep(p.peer.child);
    } else notes.push(`${p.name} not run: ${p.notRun}`);
  }
  log('all processes ready');

  const section = async (name: string, fn: () => Promise<void>): Promise<void> => {
    if (!wants(name)) return;
    try {
      await fn();
    } catch (e) {
      notes.push(`${name}: FAILED: ${(e as Error).message}`);
      log(`${name} failed: ${(e as Error).message}`);
    }
  };

  await section('embeddings', async () => {
    const eps: Record<PathName, Endpoint> = {
      direct: { origin: embInfo.url, pid: embUp.pid, token: embInfo.apiKey },
      floor: endpoint(floorEmb, embInfo.apiKey),
      gateway: endpoint(gwEmb, gwEmb.info.key),
    };
    const others: OtherStore[] = otherGateways.map((g) => ({ store: g.store, endpoint: endpoint(g.emb, g.emb.info.key) }));
    for (const format of ['float', 'base64'] as const) {
      const r = await benchEmbeddings(eps, format, P.emb, log, { main: mainStore, others }, quick && format === 'base64' ? [] : peers);
      rows.push(...r.rows);
      notes.push(...r.notes);
      storeRows.push(...r.stores);
    }
  });

  let pollFigures: Awaited<ReturnType<typeof benchPolls>>['figures'] | undefined;
  await section('polls', async () => {
    const job = await createVideoJob(gwVideo.info);
    await checkProcessing(gwVideo.info, job.id);
    const eps: Record<PathName, Endpoint> = {
      direct: endpoint(soraPoll, soraPoll.info.apiKey),
      floor: endpoint(floorPoll, soraPoll.info.apiKey),
      gateway: endpoint(gwVideo, gwVideo.info.key),
    };
    const others: OtherStore[] = [];
    for (const g of otherGateways) {
      const j = await createVideoJob(g.video.info);
      await checkProcessing(g.video.info, j.id);
      others.push({ store: g.store, endpoint: endpoint(g.video, g.video.info.key), jobId: j.id });
    }
    const r = await benchPolls(eps, job, P.polls, log, { main: mainStore, others });
    rows.push(...r.rows);
    notes.push(...r.notes);
    storeRows.push(...r.stores);
    pollFigures = r.figures;
  });

  await section('scale', async () => {
    if (!pollFigures) throw new Error('needs the polls section (its small-state figures are the baseline)');
    if (mainStore !== 'sqlite') throw new Error('writes its jobs into a SQLite file: run it with sqlite as the first of --stores');
    const gw = { ...endpoint(gwVideo, gwVideo.info.key), info: gwVideo.info, dbPath: gatewayDbPath(run, 'gw-video') };
    const r = await benchScale(gw, pollFigures.gateway, pollFigures.floor, P.jobs, P.polls, log);
    rows.push(...r.rows);
    notes.push(...r.notes);
  });

  await section('download', async () => {
    const job = await createVideoJob(gwDl.info);
    await waitForStatus(gwDl.info, job.id, 'completed', 15_000);
    const eps: Record<PathName, Endpoint> = {
      direct: endpoint(soraDl, soraDl.info.apiKey),
      floor: endpoint(floorDl, soraDl.info.apiKey),
      gateway: endpoint(gwDl, gwDl.info.key),
    };
    rows.push(...(await benchDownload(eps, job, P.downloadBytes, P.downloadRepeats, log)));
  });

  const foreign = load.measure(children.map((c) => c.pid));
  const busyNote = `Other processes on this machine used ${foreign.foreignCores.toFixed(2)} cores on average during the run`;
  notes.push(foreign.foreignCores > 0.1 ? `${busyNote}: figures are noisier than on an idle machine.` : `${busyNote}.`);
  log('stopping processes');
  await Promise.all(children.map((c) => c.stop()));
  if (stores.some((s) => STORES[s].database === 'postgres')) await dropBenchSchemas('mine');
  report(rows, storeRows, notes, peerStatus);
}

/** The #16 targets of the PostgreSQL rows of the store table, as rows of the targets table. */
function storeTargets(storeRows: StoreFigures[]): Row[] {
  const out: Row[] = [];
  for (const f of storeRows) {
    if (STORES[f.store].database !== 'postgres') continue;
    const sqlite = storeRows.find((g) => g.section === f.section && g.store === 'sqlite');
    const section = `${f.section}, ${STORES[f.store].label}`;
    const ratio = (v: number, base: number): number => v / base;
    if (sqlite) {
      const sat = ratio(f.saturation, sqlite.saturation);
      const p50 = ratio(f.p50At32Ms, sqlite.p50At32Ms);
      out.push({ section, measure: "saturation / SQLite's", gateway: sat, digits: 2, target: { text: '>= 0.8x', met: sat >= 0.8 } });
      out.push({ section, measure: "p50 at 32 connections / SQLite's", gateway: p50, digits: 2, target: { text: '<= 2x', met: p50 <= 2 } });
    }
    const cpu = ratio(f.cpuPerRequestUs, f.floorCpuPerRequestUs);
    out.push({ section, measure: "CPU per request / floor's", gateway: cpu, digits: 2, target: { text: '<= 2x', met: cpu <= 2 } });
  }
  return out;
}

function report(rows: Row[], storeRows: StoreFigures[], notes: string[], peers: PeerStatus[]): void {
  const m = machine();
  const lines = [
    `Machine: ${describeMachine(m)}. Load generator, gateway, floor proxy and upstream share these cores.`,
    `Run: \`npm run bench${quick ? ' -- --quick' : ''}\` (${quick ? 'quick: short phases' : 'full'}), ${((performance.now() - started) / 1000).toFixed(0)} s; ` +
      `processes: ${runtime ? 'transpiled by esbuild, run by plain node' : 'run under tsx'}; ` +
      `embeddings upstream: ${useSim ? 'src/embeddings/vendors/openai simulator' : 'bench/children/embeddings-upstream.ts (1,536 floats, ~20 KB)'}.`,
    '',
    renderTable(rows, peers.map((p) => ({ name: p.name, notRun: p.notRun }))),
    '',
    '- Direct: straight to the upstream. Floor proxy: bench/children/floor-proxy.ts (undici pool, bodies piped, nothing parsed). Gateway: the real gateway with auth, limiter, billing and info logging.',
    '- Embeddings latency rows: Direct is the absolute latency; Floor proxy and Gateway are the latency they add over Direct at the same percentile and settings. Fixed-rate latencies are measured from each request\'s scheduled send time.',
    '- CPU per request: utime + stime from /proc/<pid>/stat of the process serving that path (Direct: the upstream itself) during that phase (32 connections, or the fixed rate), divided by the requests it served. req/s per core = 1,000,000 / CPU us per request. RSS: VmRSS.',
    ...(quick
      ? []
      : [`- Embeddings at 1 connection and at 32 connections, and video polls at 32 connections (the stores table's rows too): ${P.emb.rounds} rounds per path, the order of the paths rotating each round; each figure (p50, p99, saturation, CPU per request) is the median of its rounds. The fixed-rate phases and the scale section run once.`]),
    '- Scale rows: the poll gateway after its store received the jobs (polls pick a random stored job each time); the Floor proxy column repeats the floor\'s poll figures for the ratio.',
    `- Gateway column: the gateway on ${STORES[mainStore].label}.`,
    ...(peers.length
      ? [
          '- Peers: the same embeddings load through Portkey OSS (npm @portkey-ai/gateway, provider and upstream in request headers) and nginx (proxy_pass with upstream keep-alive, buffered access log), one process each; the figure in brackets is the ratio to the floor proxy.' +
            (quick ? ' Quick runs measure the peers with float vectors only.' : ''),
        ]
      : []),
    ...(storeRows.length > 0
      ? [
          '',
          'Stores side by side (the same gateway, the same phases, in this run; `--stores=` picks them):',
          '',
          renderStoreTable(storeRows),
          '',
          '- Ratios are to the SQLite gateway of the same section in this run, and to the floor proxy\'s CPU per request at 32 connections; the targets (#16) apply to the PostgreSQL rows.',
        ]
      : []),
    ...notes.map((n) => `- Note: ${n}`),
    '',
    '## Targets',
    '',
    renderTargets([...rows, ...storeTargets(storeRows)]),
  ];
  const text = lines.join('\n');
  process.stdout.write(`\n${text}\n`);
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, quick ? 'latest-quick.md' : 'latest.md');
  writeFileSync(file, `# Benchmark results\n\n${text}\n`);
  log(`written to ${file}`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`bench: ${(e as Error).stack ?? String(e)}\n`);
    killAll();
    process.exit(1);
  },
);
