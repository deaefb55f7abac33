import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { SqlDriver } from '../../src/store/driver.js';
import { createSqlStore, MIGRATIONS, migrate, openDriver } from '../../src/store/index.js';
import type { Migration } from '../../src/store/migrations.js';
import { backfillStep } from '../../src/store/rollups.js';
import { int } from '../../src/store/rows.js';
import { expectTablesMatchLedger } from './cases-rollups.js';
import { PG_URL } from './harness.js';

/**
 * The migrations that add the ledger's running totals and take in the rows already there, on a
 * database that already has a ledger: the running totals start from every
 * row written before them, exactly once, also when PostgreSQL instances keep writing while the
 * backfill runs in parts, when a writer's transaction is open as the trigger is created, and when a
 * start is cut off part way.
 */
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 1);
/** The migration that takes in the rows already there, and the one before it that creates the totals. */
const BACKFILL = MIGRATIONS.find((m) => 'backfill' in m)!.version;
const TOTALS = BACKFILL - 1;
const BEFORE = MIGRATIONS.filter((m) => m.version < TOTALS);
const dir = mkdtempSync(join(tmpdir(), 'rollup-backfill-'));
const prefix = `rollup_test_${randomBytes(4).toString('hex')}`;
const opened: SqlDriver[] = [];
const schemas: string[] = [];
let n = 0;

async function fresh(dialect: 'sqlite' | 'postgres'): Promise<{ db: SqlDriver; url: string }> {
  const url = dialect === 'sqlite' ? `sqlite:${join(dir, `db${++n}.db`)}` : `${PG_URL}?schema=${prefix}_${++n}`;
  if (dialect === 'postgres') schemas.push(`${prefix}_${n}`);
  const db = await openDriver(url, { dataDir: dir });
  opened.push(db);
  return { db, url };
}

/** The migrations with the backfill's steps `rows` ledger rows each, `before` running ahead of every step. */
function inParts(rows: number, before: () => Promise<void> = async () => {}): { migrations: Migration[]; steps: () => number } {
  let steps = 0;
  const migrations = MIGRATIONS.map((m) =>
    m.version === BACKFILL ? { ...m, backfill: { step: async (tx: Parameters<typeof backfillStep>[0], d: 'sqlite' | 'postgres') => (await before(), steps++, backfillStep(tx, d, rows)) } } : m,
  );
  return { migrations, steps: () => steps };
}

/**
 * What a ledger holds before the totals exist: an opening credit, a video's hold, release and
 * capture, a failed one's hold and release, one still running, charges of two keys and models over
 * three days, and a charge without key or model (written before the ledger recorded them).
 */
async function writeOldLedger(db: SqlDriver): Promise<void> {
  await db.run(`INSERT INTO accounts (id, name, balance, upstreams, limits, created_at) VALUES ('acct', 'acct', 0, NULL, '{}', ${T0})`);
  const row = (kind: string, delta: number, ref: string, at: number, key: string | null, model: string | null) =>
    db.run('INSERT INTO ledger (account_id, kind, delta, ref, note, created_at, key_id, model, upstream) VALUES (?, ?, ?, ?, NULL, ?, ?, ?, NULL)', ['acct', kind, delta, ref, at, key, model]);
  await row('credit', 1_000_000, 'open', T0, null, null);
  await row('hold', -5_000, 'job-1', T0 + 1, 'key-a', 'sora-2');
  await row('release', 5_000, 'job-1', T0 + DAY + 5, 'key-a', 'sora-2');
  await row('capture', -4_200, 'job-1', T0 + DAY + 5, 'key-a', 'sora-2');
  await row('hold', -3_000, 'job-2', T0 + 2, 'key-b', 'sora-2');
  await row('release', 3_000, 'job-2', T0 + 3, 'key-b', 'sora-2');
  await row('hold', -7_000, 'job-3', T0 + 4, 'key-b', 'veo-3');
  for (let i = 0; i < 30; i++) await row('charge', -(10 + i), `emb-${i}`, T0 + (i % 3) * DAY + i * 1000, i % 2 ? 'key-a' : 'key-b', i % 4 ? 'emb-small' : 'emb-large');
  await row('charge', -99, 'old', T0 + 7, null, null);
}

const recorded = async (db: SqlDriver) => (await db.query('SELECT version FROM schema_migrations ORDER BY version')).map((r) => int(r.version));

afterAll(async () => {
  for (const db of opened) await db.close().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
  if (schemas.length === 0) return;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  try {
    for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  } finally {
    await admin.end();
  }
});

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`the ledger's running totals on a database with a ledger (${dialect})`, () => {
    it('count every row written before them once, the backfill in parts', async () => {
      const { db } = await fresh(dialect);
      await migrate(db, BEFORE);
      await writeOldLedger(db);
      const run = inParts(7);
      expect(await migrate(db, run.migrations)).toEqual(MIGRATIONS.filter((m) => m.version >= TOTALS).map((m) => m.version));
      // 38 rows, 7 a step, then the step that finds none left.
      expect(run.steps()).toBe(7);
      await expectTablesMatchLedger(db);
      const store = createSqlStore(db);
      expect((await store.keySpend('key-a', T0 + 3 * DAY)).total).toBe(4_200 + 15 * 10 + (1 + 3 + 5 + 7 + 9 + 11 + 13 + 15 + 17 + 19 + 21 + 23 + 25 + 27 + 29));
      expect((await store.keySpend('key-b', T0 + 3 * DAY)).total).toBe(7_000 + 15 * 10 + (0 + 2 + 4 + 6 + 8 + 10 + 12 + 14 + 16 + 18 + 20 + 22 + 24 + 26 + 28));
      expect(await store.usage({ from: T0, to: T0 + DAY, groupBy: 'key' })).toEqual([
        { group: 'key-a', spent: 5 * 10 + (3 + 9 + 15 + 21 + 27), requests: 5 },
        { group: 'key-b', spent: 5 * 10 + (0 + 6 + 12 + 18 + 24), requests: 5 },
        { group: '', spent: 99, requests: 1 },
      ]);
      // The bookkeeping is gone, and a later start has nothing left to do.
      await expect(db.query('SELECT upto FROM ledger_rollup_backfill')).rejects.toThrow();
      expect(await migrate(db)).toEqual([]);
      await expectTablesMatchLedger(db);
    });

    it('carry on where a start cut off part way stopped, counting nothing twice', async () => {
      const { db } = await fresh(dialect);
      await migrate(db, BEFORE);
      await writeOldLedger(db);
      let calls = 0;
      const broken = inParts(5, async () => {
        if (++calls === 4) throw new Error('connection lost');
      });
      await expect(migrate(db, broken.migrations)).rejects.toThrow('connection lost');
      // SQLite rolls the whole migration back; PostgreSQL keeps the totals' tables and the parts already counted.
      expect(await recorded(db)).toEqual(dialect === 'sqlite' ? BEFORE.map((m) => m.version) : [...BEFORE.map((m) => m.version), TOTALS]);
      expect(await migrate(db)).toEqual(MIGRATIONS.filter((m) => m.version >= (dialect === 'sqlite' ? TOTALS : BACKFILL)).map((m) => m.version));
      await expectTablesMatchLedger(db);
    });
  });
}

describe("the ledger's running totals while PostgreSQL instances keep writing", () => {
  it('count the charges made while the backfill runs once, and the rows before it once', async () => {
    const { db, url } = await fresh('postgres');
    await migrate(db, BEFORE);
    await writeOldLedger(db);
    const other = createSqlStore(await openDriver(url, { dataDir: dir }));
    opened.push(other.driver);
    // Each step starts alongside a charge batch of another instance: new charges of an old key and a
    // new one, and the duplicate of a charge written before the migration.
    const writes: Promise<unknown>[] = [];
    let step = 0;
    const run = inParts(4, async () => {
      const i = step++;
      const charge = (ref: string, keyId: string) => ({ accountId: 'acct', amount: 7, ref, note: null, now: T0 + DAY + i, by: { keyId, model: 'emb-small' } });
      writes.push(other.chargeMany([charge(`live-${i}`, 'key-a'), charge(`live-new-${i}`, 'key-c'), charge('emb-3', 'key-a')]));
    });
    await migrate(db, run.migrations);
    const results = await Promise.all(writes);
    expect(results.flat().filter((r) => r === 'ok')).toHaveLength(2 * writes.length);
    await expectTablesMatchLedger(db);
    expect((await other.keySpend('key-c', T0 + 3 * DAY)).total).toBe(7 * writes.length);
  });

  it('count once a row whose transaction was open when the trigger was created', async () => {
    const { db } = await fresh('postgres');
    await migrate(db, BEFORE);
    await writeOldLedger(db);
    const schema = schemas.at(-1)!;
    const writer = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      await writer.query(
        "INSERT INTO ledger (account_id, kind, delta, ref, note, created_at, key_id, model, upstream) VALUES ('acct', 'charge', -500, 'in-flight', NULL, $1, 'key-a', 'emb-small', NULL)",
        [T0 + 9],
      );
      const { rows } = await writer.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const migrating = migrate(db);
      // CREATE TRIGGER waits for the open insert.
      for (let i = 0; ; i++) {
        const blocked = await db.query('SELECT pid FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))', [rows[0]!.pid]);
        if (blocked.length > 0) break;
        if (i > 200) throw new Error('the migration never waited for the open insert');
        await new Promise((r) => setTimeout(r, 25));
      }
      await writer.query('COMMIT');
      await migrating;
    } finally {
      await writer.end();
    }
    await expectTablesMatchLedger(db);
    const [row] = await db.query("SELECT spent FROM usage_daily WHERE key_id = 'key-a' AND model = 'emb-small' AND day = ?", [T0 / DAY]);
    // The open insert and the old charges of key-a, emb-small on that day (i = 3, 9, 15, 21, 27).
    expect(int(row!.spent)).toBe(500 + (13 + 19 + 25 + 31 + 37));
  });
});
