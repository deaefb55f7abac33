import { errors } from '../core/errors.js';
import type { Dialect, SqlDriver, SqlExecutor, SqlSession } from './driver.js';
import { MIGRATIONS, TYPES, type Backfill, type IndexBuild, type Migration } from './migrations.js';
import { int } from './rows.js';

const CREATE_VERSIONS = 'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)';
const RECORD_VERSION = 'INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)';
/** One migration lock per schema, so that gateways on different schemas of one database migrate independently. */
const PG_LOCK_KEY = "hashtext('gateway-migrate:' || current_schema())";
/** How often an instance that finds the migration lock taken asks again (see `lockMigrations`). */
const PG_LOCK_POLL_MS = 100;
/** How long an instance waits for another's migration lock before it gives up, unless told otherwise. */
export const MIGRATION_LOCK_TIMEOUT_MS = 5 * 60_000;
/** How often a wait for the migration lock is told about. */
const LOCK_NOTICE_EVERY_MS = 10_000;

export interface MigrateOptions {
  /** PostgreSQL: the longest to wait for the migration lock another session holds (MIGRATION_LOCK_TIMEOUT_MS). */
  lockTimeoutMs?: number;
  /** PostgreSQL: told, at once and then every `lockNoticeEveryMs` (10 s), that the lock is waited for and who holds it. */
  onLockWait?: (message: string) => void;
  lockNoticeEveryMs?: number;
}

/**
 * Applies every migration not yet recorded in schema_migrations, in version order, and returns the
 * versions it applied. Safe to run from several processes at once: one of them migrates at a time,
 * and the others then find nothing left to do.
 *
 * SQLite: everything in one BEGIN IMMEDIATE transaction (which is also the lock), so a failure
 * leaves the schema as it was.
 *
 * PostgreSQL: on a connection of its own, under a session-level advisory lock. The migrations run in
 * one transaction, as on SQLite, except an index build (`IndexBuild`) on a database that already
 * has data: that one runs alone, outside any transaction, with CREATE INDEX CONCURRENTLY, and is
 * recorded once it has finished; and a backfill (`Backfill`) on such a database, which runs in
 * transactions of its own, a part each, and is recorded by the last. The transaction before either is
 * committed first; a failure then leaves the schema at the last recorded version, and the next start
 * carries on from there.
 */
export async function migrate(db: SqlDriver, migrations: readonly Migration[] = MIGRATIONS, opts: MigrateOptions = {}): Promise<number[]> {
  const ordered = [...migrations].sort((a, b) => a.version - b.version);
  if (db.dialect === 'sqlite') {
    return db.transaction(async (tx) => applyInTransaction(tx, 'sqlite', (await pending(tx, ordered)).todo));
  }
  return db.session((s) => migratePostgres(s, ordered, opts));
}

async function pending(db: SqlExecutor, ordered: readonly Migration[]): Promise<{ todo: Migration[]; fresh: boolean }> {
  await db.exec(CREATE_VERSIONS);
  const done = new Set((await db.query('SELECT version FROM schema_migrations')).map((r) => int(r.version)));
  return { todo: ordered.filter((m) => !done.has(m.version)), fresh: done.size === 0 };
}

/** Runs a migration inside the caller's transaction (a backfill: all its steps). */
async function applyMigration(tx: SqlExecutor, m: Migration, dialect: Dialect): Promise<void> {
  if ('backfill' in m) {
    while (!(await m.backfill.step(tx, dialect)));
    return;
  }
  const sql = 'sql' in m ? m.sql(TYPES[dialect], dialect) : `CREATE INDEX ${m.index.name} ON ${m.index.table} (${m.index.columns});`;
  await tx.exec(sql);
}

async function applyInTransaction(tx: SqlExecutor, dialect: Dialect, steps: readonly Migration[]): Promise<number[]> {
  for (const m of steps) {
    await applyMigration(tx, m, dialect);
    await tx.run(RECORD_VERSION, [m.version, m.name, Date.now()]);
  }
  return steps.map((m) => m.version);
}

async function migratePostgres(s: SqlSession, ordered: readonly Migration[], opts: MigrateOptions): Promise<number[]> {
  await lockMigrations(s, opts);
  try {
    const { todo, fresh } = await pending(s, ordered);
    const applied: number[] = [];
    let batch: Migration[] = [];
    const commitBatch = async () => {
      const steps = batch;
      batch = [];
      if (steps.length > 0) applied.push(...(await s.transaction((tx) => applyInTransaction(tx, 'postgres', steps))));
    };
    for (const m of todo) {
      // A new database (nothing recorded) builds its indexes in the one transaction: its tables are
      // new and nobody writes to them, while a concurrent build would wait out every statement
      // running anywhere in the database (it waits for older snapshots to go).
      // Its backfill finds nothing to take in either.
      if (!('index' in m || 'backfill' in m) || fresh) {
        batch.push(m);
        continue;
      }
      await commitBatch();
      if ('index' in m) {
        await buildIndexConcurrently(s, m.index);
        await s.run(RECORD_VERSION, [m.version, m.name, Date.now()]);
      } else await backfillInParts(s, m, m.backfill);
      applied.push(m.version);
    }
    await commitBatch();
    return applied;
  } finally {
    // Closing the session would release it too; this lets the next instance in at once.
    await s.query(`SELECT pg_advisory_unlock(${PG_LOCK_KEY})`).catch(() => {});
  }
}

/**
 * A backfill's steps, each in a transaction of its own, so that the tables it reads and writes stay
 * open to writes between them. The step that finds nothing left is recorded in the same transaction.
 */
async function backfillInParts(s: SqlSession, m: Migration, backfill: Backfill): Promise<void> {
  for (;;) {
    const done = await s.transaction(async (tx) => {
      if (!(await backfill.step(tx, 'postgres'))) return false;
      await tx.run(RECORD_VERSION, [m.version, m.name, Date.now()]);
      return true;
    });
    if (done) return;
  }
}

/**
 * Takes the migration lock, asking again every PG_LOCK_POLL_MS while another instance holds it. Not
 * pg_advisory_lock, which waits inside one statement: a statement holds a snapshot while it waits,
 * and a concurrent index build in the lock's holder waits for every older snapshot to go, so the
 * two would wait for each other (PostgreSQL would end one of them as a deadlock).
 *
 * Not for ever, nor silently: a session that took the lock and never lets it go (a stuck gateway,
 * an operator's psql) would hold every start-up at this point with nothing said. The wait is told
 * about (`onLockWait`, with the holder's pid) at once and every 10 s, and given up after
 * `lockTimeoutMs` with an error that says which lock, who holds it and how to wait longer.
 */
async function lockMigrations(s: SqlSession, opts: MigrateOptions): Promise<void> {
  const started = Date.now();
  const timeoutMs = opts.lockTimeoutMs ?? MIGRATION_LOCK_TIMEOUT_MS;
  const noticeEveryMs = opts.lockNoticeEveryMs ?? LOCK_NOTICE_EVERY_MS;
  let noticeAt = started;
  for (;;) {
    const [r] = await s.query(`SELECT pg_try_advisory_lock(${PG_LOCK_KEY}) AS locked`);
    if (r?.locked === true) return;
    const waited = Date.now() - started;
    if (waited >= timeoutMs) {
      const lock = await describeLock(s);
      throw errors.internal(
        `Gave up after ${seconds(waited)} waiting for the PostgreSQL migration lock (${lock}): another gateway is ` +
          'migrating this schema, or a session took the lock and has not let it go (pg_terminate_backend(pid) ends it). ' +
          'To wait longer, set migration_lock_timeout_ms in the database URL.',
      );
    }
    if (opts.onLockWait && Date.now() >= noticeAt) {
      noticeAt += noticeEveryMs;
      const lock = await describeLock(s);
      opts.onLockWait(
        `waiting for the PostgreSQL migration lock (${lock}): another gateway is migrating this schema, or a session ` +
          `holds the lock; waited ${seconds(waited)}, gives up after ${seconds(timeoutMs)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, PG_LOCK_POLL_MS));
  }
}

/** The migration lock and its holder, as a message names them: schema, advisory lock key and the holder's pid. */
async function describeLock(s: SqlSession): Promise<string> {
  try {
    // A bigint advisory lock shows in pg_locks as its high and low 32 bits (classid, objid), objsubid 1.
    const [r] = await s.query(
      `SELECT current_schema() AS schema, (${PG_LOCK_KEY})::bigint AS key,
              (SELECT l.pid FROM pg_locks l
                WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
                  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                  AND ((l.classid::bigint << 32) | l.objid::bigint) = (${PG_LOCK_KEY})::bigint
                LIMIT 1) AS holder`,
    );
    const holder = r?.holder === null || r?.holder === undefined ? 'its holder no longer listed' : `held by pid ${String(r.holder)}`;
    return `schema ${String(r?.schema)}, advisory lock ${String(r?.key)}, ${holder}`;
  } catch {
    return 'its holder unknown';
  }
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/**
 * CREATE INDEX CONCURRENTLY, after what an earlier attempt may have left. A build that failed or was
 * cut off (an error, a cancelled statement, a process killed mid-build) leaves the index in the
 * catalog marked invalid: never used, but still updated by every write; it is dropped and built
 * again. A valid one was finished by an attempt that stopped before recording it, and is kept. No
 * build of ours can still be running: its session would hold the migration lock.
 */
async function buildIndexConcurrently(s: SqlSession, ix: IndexBuild): Promise<void> {
  const [found] = await s.query(
    `SELECT i.indisvalid AS valid FROM pg_index i
       JOIN pg_class c ON c.oid = i.indexrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relname = ?`,
    [ix.name],
  );
  if (found?.valid === true) return;
  if (found) await s.exec(`DROP INDEX CONCURRENTLY ${ix.name}`);
  await s.exec(`CREATE INDEX CONCURRENTLY ${ix.name} ON ${ix.table} (${ix.columns})`);
}
