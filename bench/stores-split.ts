import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { option } from './lib/args.js';
import { compileChildren } from './lib/compile.js';
import { runMain, useCompiledChildren, type Child } from './lib/children.js';
import { closedLoop, LoadClient, type RequestSpec } from './lib/load.js';
import { cpuMicros, machineBusyMicros } from './lib/proc.js';
import { EMBEDDING_MODEL, embeddingsGatewayConfig, scratchRun, startEmbeddingsUpstream, startGateway } from './lib/setup.js';
import { median } from './lib/stats.js';
import { BENCH_PG_URL, dropBenchSchemas, ensureServices, parseStores, redisServerPid, STORES, type StoreName } from './lib/stores.js';

/**
 * Where the CPU of an embeddings request goes on each store, by process: the gateway, the mock
 * upstream, this load generator, PostgreSQL (all its backends and background workers) and Redis.
 * At saturation every process shares the machine's two cores, so throughput follows the sum; this
 * says which process a store's extra cost lands on. Also counts PostgreSQL commits per request (the
 * ledger's batched charges). Rounds rotate the stores' order; each figure is the median of its rounds.
 *
 *   node --import tsx bench/stores-split.ts [--stores=sqlite,pg,pg-memory,sqlite-redis] [--connections=32] [--seconds=6] [--rounds=3]
 */
const args = process.argv.slice(2);
const stores = parseStores(args);
const connections = Number(option('connections', args) ?? 32);
const seconds = Number(option('seconds', args) ?? 6);
const rounds = Number(option('rounds', args) ?? 3);
const run = scratchRun('stores-split');

/** Pids of every process whose command name is `comm` (PostgreSQL runs one per backend). */
function pidsOf(comm: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/comm`, 'utf8').trim() === comm) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** CPU of all processes named `comm`; backends that come and go within the window are missed (pools keep theirs). */
function cpuOfAll(comm: string): Map<number, number> {
  const m = new Map<number, number>();
  for (const pid of pidsOf(comm)) {
    try {
      m.set(pid, cpuMicros(pid));
    } catch {
      // gone meanwhile
    }
  }
  return m;
}
const deltaOf = (before: Map<number, number>, after: Map<number, number>): number => {
  let sum = 0;
  for (const [pid, v] of after) sum += v - (before.get(pid) ?? v);
  return sum;
};

async function commits(client: pg.Client): Promise<number> {
  const r = await client.query<{ n: string }>('SELECT sum(xact_commit)::text AS n FROM pg_stat_database');
  return Number(r.rows[0]!.n);
}

async function main(): Promise<void> {
  useCompiledChildren(await compileChildren());
  // PostgreSQL's commits are read whatever the stores, so the services must run either way.
  ensureServices();
  await dropBenchSchemas('stale');
  const redisPid = await redisServerPid();
  const redisCpu = (): number => (redisPid === undefined ? Number.NaN : cpuMicros(redisPid));
  const children: Child<unknown>[] = [];
  const up = await startEmbeddingsUpstream();
  children.push(up);
  const gateways = new Map<StoreName, { pid: number; client: LoadClient; spec: RequestSpec }>();
  for (const s of stores) {
    const gw = await startGateway(run, `gw-${s}`, embeddingsGatewayConfig(run, `gw-${s}`, up.info, s));
    children.push(gw);
    const body = JSON.stringify({ model: EMBEDDING_MODEL, input: 'The quick brown fox jumps over the lazy dog while the benchmark measures every hop.' });
    const spec: RequestSpec = { method: 'POST', path: '/v1/embeddings', headers: { authorization: `Bearer ${gw.info.key}`, 'content-type': 'application/json' }, body };
    gateways.set(s, { pid: gw.pid, client: new LoadClient(gw.info.url, connections), spec });
  }
  const db = new pg.Client({ connectionString: BENCH_PG_URL });
  await db.connect();
  const figures = new Map<StoreName, Record<string, number>[]>(stores.map((s) => [s, []]));
  for (let r = 0; r < rounds; r++) {
    const order = stores.map((_, i) => stores[(i + r) % stores.length]!);
    for (const s of order) {
      const g = gateways.get(s)!;
      await closedLoop(g.client, g.spec, { workers: connections, durationMs: 3_000 });
      const before = { gw: cpuMicros(g.pid), up: cpuMicros(up.pid), self: process.cpuUsage(), pg: cpuOfAll('postgres'), redis: redisCpu(), commits: await commits(db), machine: machineBusyMicros() };
      const res = await closedLoop(g.client, g.spec, { workers: connections, durationMs: seconds * 1000 });
      const self = process.cpuUsage(before.self);
      const n = res.ok;
      if (n === 0) throw new Error(`${s}: no request succeeded (first error: ${res.firstError ?? 'none'})`);
      const row = {
        'req/s': (n * 1000) / res.elapsedMs,
        gateway: (cpuMicros(g.pid) - before.gw) / n,
        upstream: (cpuMicros(up.pid) - before.up) / n,
        'load generator': (self.user + self.system) / n,
        postgres: deltaOf(before.pg, cpuOfAll('postgres')) / n,
        redis: (redisCpu() - before.redis) / n,
        // The query that reads the count is a commit too.
        'pg commits': ((await commits(db)) - before.commits - 1) / n,
        machine: (machineBusyMicros() - before.machine) / n,
      };
      figures.get(s)!.push(row);
      console.log(`round ${r + 1} ${s}: ${Object.entries(row).map(([k, v]) => `${k} ${v.toFixed(k === 'pg commits' ? 3 : 1)}`).join(', ')}`);
    }
  }
  await db.end();
  const keys = Object.keys(figures.get(stores[0]!)![0]!);
  console.log(`\nEmbeddings at ${connections} connections, median of ${rounds} rounds; CPU in µs per request by process`);
  console.log(`| store | ${keys.join(' | ')} |`);
  console.log(`|---|${keys.map(() => '--:').join('|')}|`);
  for (const s of stores) {
    const rows = figures.get(s)!;
    console.log(`| ${STORES[s].label} | ${keys.map((k) => median(rows.map((x) => x[k]!)).toFixed(k === 'pg commits' ? 3 : k === 'req/s' ? 0 : 1)).join(' | ')} |`);
  }
  for (const g of gateways.values()) await g.client.close();
  await Promise.all(children.map((c) => c.stop()));
  await dropBenchSchemas('mine');
}

runMain('stores-split', main);
