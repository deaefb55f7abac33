import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EmbeddingsUpstreamInfo } from '../children/embeddings-upstream.js';
import type { FloorProxyInfo } from '../children/floor-proxy.js';
import type { GatewayChildInfo, GatewayChildOptions } from '../children/gateway.js';
import type { SimChildInfo, SimChildOptions } from '../children/sim.js';
import { onExit, startChild, type Child } from './children.js';
import { BENCH_REDIS_URL, pgSchema, pgUrl, STORES, type StoreName } from './stores.js';

/**
 * How the benchmark wires its processes: the gateway configurations (SQLite in a temp dir, info
 * logging to a file, the in-process limiter with quotas far above what the load can reach, priced
 * models so every request is billed) and the start-up of each child.
 */

/** Seals video ids; the parent needs it too, to mint ids for the jobs it writes into the store. */
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export const BENCH_SECRET = 'bench-id-secret-0123456789abcdef';
export const EMBEDDING_MODEL = 'text-embedding-3-small';
export const VIDEO_MODEL = 'sora-2';
export const VIDEO_UPSTREAM = 'sora-bench';
/** Price per second of video; with a 4 s estimate each job holds 0.4 units. */
export const VIDEO_PRICE = 0.1;

export interface BenchRun {
  /** Temp directory for databases and logs; removed at exit. */
  dir: string;
  /**
   * When set, each gateway runs with --cpu-prof and writes its profiles into `<profileDir>/<name>/` on
   * exit (one per thread: the main thread's file has thread id 0, the `.0.` before the sequence number).
   */
  profileDir?: string;
}

/** A run whose temp directory (`<os tmpdir>/gw-bench-<label>-*`) is removed when the process exits. */
export function scratchRun(label: string, profileDir?: string): BenchRun {
  const run: BenchRun = { dir: mkdtempSync(join(tmpdir(), `gw-bench-${label}-`)), profileDir };
  onExit(() => rmSync(run.dir, { recursive: true, force: true }));
  return run;
}

function baseConfig(run: BenchRun, name: string, store: StoreName = 'sqlite'): Record<string, unknown> {
  const dataDir = join(run.dir, name);
  mkdirSync(dataDir, { recursive: true });
  const s = STORES[store];
  return {
    server: { host: '127.0.0.1', port: 0 },
    database: s.database === 'sqlite' ? `sqlite:${join(dataDir, 'gateway.db')}` : pgUrl(pgSchema(name)),
    data_dir: dataDir,
    log_level: 'info',
    secret: BENCH_SECRET,
    admin_token: 'bench-admin-token-0123456789',
    limits: {
      backend: s.limiter,
      ...(s.limiter === 'redis' ? { redis_url: BENCH_REDIS_URL } : {}),
      // Enforced (every request is admitted and counted) but never reached by the load.
      defaults: { embeddings: { rpm: 100_000_000, tpm: 10_000_000_000 }, chat: { rpm: 1_000_000 }, video: { rpm: 100_000_000 } },
    },
  };
}

export function gatewayDbPath(run: BenchRun, name: string): string {
  return join(run.dir, name, 'gateway.db');
}

export function embeddingsGatewayConfig(run: BenchRun, name: string, up: { url: string; apiKey: string }, store: StoreName = 'sqlite'): Record<string, unknown> {
  return {
    ...baseConfig(run, name, store),
    upstreams: [{ name: 'openai-bench', vendor: 'openai', base_url: up.url, api_key: up.apiKey, models: [EMBEDDING_MODEL], timeout_ms: 30_000 }],
    models: { [EMBEDDING_MODEL]: { capabilities: ['embedding'], price: { per_million_input_tokens: 0.02 } } },
  };
}

/**
 * A Sora gateway. `pollIntervalMs` large: polls are answered from the store (the production case
 * for clients that poll more often than the gateway refreshes); 0: every poll refreshes.
 */
export function videoGatewayConfig(
  run: BenchRun,
  name: string,
  up: { url: string; apiKey: string },
  pollIntervalMs: number,
  store: StoreName = 'sqlite',
): Record<string, unknown> {
  return {
    ...baseConfig(run, name, store),
    video: { poll_interval_ms: pollIntervalMs, media: { allow_private_networks: true } },
    upstreams: [{ name: VIDEO_UPSTREAM, vendor: 'sora', base_url: up.url, api_key: up.apiKey, models: [VIDEO_MODEL], timeout_ms: 30_000 }],
    models: { [VIDEO_MODEL]: { capabilities: ['video'], price: { per_second: VIDEO_PRICE } } },
  };
}

/** Extra node flags and environment for one child (bench/timeline.ts loads its probe this way). */
export interface ChildExtras {
  nodeArgs?: string[];
  env?: Record<string, string>;
  /** Where the floor proxy's stdout goes (e.g. V8's GC trace); the gateway's always goes to its log file. */
  logFile?: string;
}

export function startGateway(
  run: BenchRun,
  name: string,
  config: Record<string, unknown>,
  poller = false,
  compiledDir?: string,
  extras: ChildExtras = {},
): Promise<Child<GatewayChildInfo>> {
  const options: GatewayChildOptions = { config, account: { name: 'bench', balance: 100_000_000 }, poller };
  // Started as `npm start` starts it (allocator settings, V8 flags).
  const production = productionProcess();
  return startChild<GatewayChildInfo>(`gateway ${name}`, 'gateway.ts', options, {
    nodeArgs: [...production.nodeArgs, ...(run.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${join(run.profileDir, name)}`] : []), ...(extras.nodeArgs ?? [])],
    logFile: join(run.dir, `${name}.log`),
    env: { ...production.env, ...extras.env },
    // Several gateways start at once; on a busy machine each can take a while to load.
    readyTimeoutMs: 90_000,
    compiledDir,
  });
}

export function startSim(name: string, options: SimChildOptions): Promise<Child<SimChildInfo>> {
  return startChild<SimChildInfo>(name, 'sim.ts', options);
}

export function startEmbeddingsUpstream(): Promise<Child<EmbeddingsUpstreamInfo>> {
  return startChild<EmbeddingsUpstreamInfo>('embeddings upstream', 'embeddings-upstream.ts', {});
}

export function startFloorProxy(name: string, upstream: string, extras: ChildExtras = {}): Promise<Child<FloorProxyInfo>> {
  // The same process settings as the gateway, so the memory comparison stays fair.
  const production = productionProcess();
  return startChild<FloorProxyInfo>(name, 'floor-proxy.ts', { upstream }, {
    nodeArgs: [...production.nodeArgs, ...(extras.nodeArgs ?? [])],
    env: { ...production.env, ...extras.env },
    logFile: extras.logFile,
  });
}

/**
 * How `npm start` runs the gateway, read from package.json's start script so the bench runs it the
 * same way: the `VAR=value` words before `node` (glibc allocator thresholds that return freed
 * memory) and the node flags after it (V8's heap growing factor).
 */
export function productionProcess(): { env: Record<string, string>; nodeArgs: string[] } {
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts?: { start?: string } };
  const words = (pkg.scripts?.start ?? '').split(/\s+/).filter(Boolean);
  const env: Record<string, string> = {};
  let i = 0;
  for (; i < words.length; i++) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(words[i]!);
    if (!m) break;
    env[m[1]!] = m[2]!;
  }
  const nodeArgs: string[] = [];
  if (words[i] === 'node') for (i++; i < words.length && words[i]!.startsWith('--'); i++) nodeArgs.push(words[i]!);
  return { env, nodeArgs };
}
