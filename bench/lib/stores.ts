import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';

/**
 * The stores a benchmarked gateway can run on. `sqlite` (in-process limiter) is what a single
 * instance uses; `pg` (PostgreSQL + Redis limiter) is what every multi-instance deployment uses.
 * The two mixed ones separate the database's cost from the limiter's when attributing.
 */
export const STORES = {
  sqlite: { label: 'SQLite / memory limiter', database: 'sqlite', limiter: 'memory' },
  pg: { label: 'PostgreSQL / Redis limiter', database: 'postgres', limiter: 'redis' },
  'pg-memory': { label: 'PostgreSQL / memory limiter', database: 'postgres', limiter: 'memory' },
  'sqlite-redis': { label: 'SQLite / Redis limiter', database: 'sqlite', limiter: 'redis' },
} as const;
export type StoreName = keyof typeof STORES;

export const BENCH_PG_URL = process.env['BENCH_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
export const BENCH_REDIS_URL = process.env['BENCH_REDIS_URL'] ?? 'redis://127.0.0.1:6379';
/** Every schema this run creates starts with this; the pid in it tells a leftover from a live run. */
const SCHEMA_PREFIX = 'gw_bench_';

/** `--stores=sqlite,pg` (default: both, SQLite first: its gateway is the main table's Gateway column). */
export function parseStores(args: string[]): StoreName[] {
  const raw = args.find((a) => a.startsWith('--stores='))?.slice('--stores='.length);
  if (raw === undefined) return ['sqlite', 'pg'];
  const names = raw.split(',').filter((s) => s !== '');
  for (const n of names) {
    if (!(n in STORES)) throw new Error(`--stores: unknown store ${n} (known: ${Object.keys(STORES).join(', ')})`);
  }
  if (names.length === 0) throw new Error('--stores: name at least one store');
  return [...new Set(names)] as StoreName[];
}

export function needsServices(stores: StoreName[]): boolean {
  return stores.some((s) => STORES[s].database === 'postgres' || STORES[s].limiter === 'redis');
}

/** One schema per gateway and run, so concurrent runs (and the test suite) never share tables. */
export function pgSchema(gatewayName: string): string {
  return `${SCHEMA_PREFIX}${process.pid}_${gatewayName.replace(/[^A-Za-z0-9_]/g, '_')}`;
}

export function pgUrl(schema: string): string {
  const u = new URL(BENCH_PG_URL);
  u.searchParams.set('schema', schema);
  return u.toString();
}

/** Starts the local PostgreSQL and Redis when they are down (the script waits until they answer). */
export function ensureServices(): void {
  const script = fileURLToPath(new URL('../../scripts/ensure-services.sh', import.meta.url));
  execFileSync('bash', [script], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 90_000 });
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Drops this run's schemas (`which: 'mine'`, at the end) or the ones earlier runs left behind when
 * they were killed (`'stale'`, at the start: their pid no longer runs).
 */
export async function dropBenchSchemas(which: 'mine' | 'stale'): Promise<string[]> {
  const client = new pg.Client({ connectionString: BENCH_PG_URL, connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const res = await client.query<{ nspname: string }>('SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)', [SCHEMA_PREFIX]);
    const dropped: string[] = [];
    for (const { nspname } of res.rows) {
      const pid = Number(/^gw_bench_(\d+)_/.exec(nspname)?.[1]);
      const mine = pid === process.pid;
      if (which === 'mine' ? !mine : mine || !Number.isFinite(pid) || pidAlive(pid)) continue;
      await client.query(`DROP SCHEMA IF EXISTS "${nspname}" CASCADE`);
      dropped.push(nspname);
    }
    return dropped;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The local Redis server's pid (from INFO), to read its CPU time in /proc; undefined when it is elsewhere. */
export async function redisServerPid(): Promise<number | undefined> {
  const r = new Redis(BENCH_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0 });
  r.on('error', () => undefined);
  try {
    await r.connect();
    const pid = Number(/process_id:(\d+)/.exec(await r.info('server'))?.[1]);
    const local = ['127.0.0.1', 'localhost', '::1'].includes(new URL(BENCH_REDIS_URL).hostname);
    return local && Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  } finally {
    r.disconnect();
  }
}
