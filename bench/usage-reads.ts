/**
 * What GET /v1/usage and GET /admin/usage cost in the store for one key with a long history, in
 * process (no HTTP): the figures in docs/spend.md, "What a usage read costs".
 *
 *   node --import tsx bench/usage-reads.ts [--rows=200000] [--store=sqlite|pg] [--tree=/other/checkout]
 *
 * The key's rows are written through the store's own batch write (`chargeMany`, 500 a batch): half
 * spread over the year before the current month, half in it (GET /v1/usage's default range). Each
 * read runs once to warm up, then `--calls` times; the median is printed, as wall-clock time and as
 * this process's CPU time (on SQLite the database's work is the event loop's, so CPU is the figure
 * that a busy machine does not inflate). `--tree` measures another checkout's src/ (e.g. a worktree
 * of the commit before) against the same data shape.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BENCH_PG_URL } from './lib/stores.js';

const { values: args } = parseArgs({
  options: { rows: { type: 'string', default: '200000' }, store: { type: 'string', default: 'sqlite' }, tree: { type: 'string', default: '.' }, calls: { type: 'string', default: '15' } },
});
const tree = resolve(args.tree);
const { openStore } = (await import(join(tree, 'src/store/index.ts'))) as typeof import('../src/store/index.js');
const { keyUsage } = (await import(join(tree, 'src/admin/usage.ts'))) as typeof import('../src/admin/usage.js');

const ROWS = Number(args.rows);
const CALLS = Number(args.calls);
const DAY = 86_400_000;
const NOW = Date.UTC(2026, 5, 20, 12);
const MONTH = Date.UTC(2026, 5, 1);
const schema = `usage_reads_${process.pid}`;
const dir = mkdtempSync(join(tmpdir(), 'usage-reads-'));
const url = args.store === 'pg' ? `${BENCH_PG_URL}?schema=${schema}` : `sqlite:${join(dir, 'gateway.db')}`;
const store = await openStore(url, { dataDir: dir });

try {
  const account = await store.createAccount({ name: 'big', balance: 1e12, upstreams: null, limits: {}, now: NOW });
  const key = await store.createKey({
    id: 'key-big', accountId: account.id, hash: 'h', prefix: 'sk-gw-big', name: 'big', models: ['*'], actions: ['embeddings'], limits: {}, expiresAt: null, createdAt: NOW - 400 * DAY,
  });
  const written = performance.now();
  for (let i = 0; i < ROWS; i += 500) {
    const batch = [];
    for (let j = i; j < Math.min(ROWS, i + 500); j++) {
      const at = j % 2 === 0 ? MONTH - 365 * DAY + Math.floor((j / ROWS) * 365 * DAY) : MONTH + Math.floor((j / ROWS) * (NOW - MONTH));
      batch.push({ accountId: account.id, amount: 10 + (j % 7), ref: `r${j}`, note: null, now: at, by: { keyId: key.id, model: j % 3 ? 'text-embedding-3-small' : 'text-embedding-3-large' } });
    }
    await store.chargeMany(batch);
  }
  console.log(`${store.kind}, ${tree}: ${ROWS} ledger rows of one key written in ${Math.round(performance.now() - written)} ms`);

  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const measure = async (name: string, read: () => Promise<unknown>) => {
    await read();
    const wall: number[] = [];
    const cpu: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      const c = process.cpuUsage();
      const t = performance.now();
      await read();
      wall.push(performance.now() - t);
      const used = process.cpuUsage(c);
      cpu.push((used.user + used.system) / 1000);
    }
    console.log(`  ${name}: ${median(wall).toFixed(2)} ms wall, ${median(cpu).toFixed(2)} ms CPU (median of ${CALLS})`);
  };
  await measure('GET /v1/usage, default range (this month)', () => keyUsage(store, account, key, {}, NOW));
  await measure('GET /v1/usage, from/to within days', () => keyUsage(store, account, key, { from: '2025-07-01T09:30:00Z', to: '2026-06-20T08:00:00Z' }, NOW));
  await measure('GET /admin/usage, every account, 366 days by key', () => store.usage({ from: Date.UTC(2025, 5, 20), to: Date.UTC(2026, 5, 21), groupBy: 'key' }));
} finally {
  if (store.kind === 'postgres') await store.driver.exec(`DROP SCHEMA ${schema} CASCADE`);
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
