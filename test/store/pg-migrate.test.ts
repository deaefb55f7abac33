import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { SqlDriver } from '../../src/store/driver.js';
import { MIGRATIONS, migrate, openDriver } from '../../src/store/index.js';
import { int } from '../../src/store/rows.js';
import { dropSchema, PG_URL } from './harness.js';

/**
 * The migration runner on PostgreSQL, around migration 8's index on webhook_outbox: built with
 * CREATE INDEX CONCURRENTLY on a database that already has data, so outbox writes (every webhook
 * enqueue) go on while it builds; a build left invalid is done again; a migrated database is left
 * alone; and instances starting together still migrate one at a time. Each test has its own schema.
 */

const INDEX = 'webhook_outbox_account_due';
const BEFORE_8 = MIGRATIONS.filter((m) => m.version < 8);
const prefix = `migrate_test_${randomBytes(4).toString('hex')}`;
let n = 0;
const opened: SqlDriver[] = [];
const clients: pg.Client[] = [];
const schemas: string[] = [];

async function freshSchema(): Promise<{ schema: string; db: SqlDriver }> {
  const schema = `${prefix}_${++n}`;
  schemas.push(schema);
  return { schema, db: await driverOn(schema) };
}

async function driverOn(schema: string): Promise<SqlDriver> {
  const db = await openDriver(`${PG_URL}?schema=${schema}`, { dataDir: tmpdir() });
  opened.push(db);
  return db;
}

/** A plain connection of the test's own, on `schema`. */
async function clientOn(schema: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
  c.on('error', () => {});
  await c.connect();
  clients.push(c);
  return c;
}

const outboxRow = (c: pg.Client, id: string) =>
  c.query(
    `INSERT INTO webhook_outbox (id, event_id, account_id, endpoint_id, url, event_type, payload, state, attempts, next_attempt_at, lease_until, created_at, delivered_at)
     VALUES ($1, $1, 'acct', NULL, 'https://example.com/hook', 'video.completed', '{}', 'pending', 0, 0, NULL, 0, NULL)`,
    [id],
  );

async function indexState(db: SqlDriver): Promise<Array<{ oid: number; valid: boolean; def: string }>> {
  const rows = await db.query(
    `SELECT c.oid::int AS oid, i.indisvalid AS valid, pg_get_indexdef(c.oid) AS def
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace s ON s.oid = c.relnamespace
      WHERE s.nspname = current_schema() AND c.relname = ?`,
    [INDEX],
  );
  return rows.map((r) => ({ oid: int(r.oid), valid: r.valid === true, def: String(r.def) }));
}

const versions = async (db: SqlDriver) => (await db.query('SELECT version FROM schema_migrations ORDER BY version')).map((r) => int(r.version));

/** Waits until some backend waits for a lock that `holder` (a backend pid) holds; returns its pid. */
async function blockedBy(watcher: pg.Client, holder: number): Promise<number> {
  for (let i = 0; i < 400; i++) {
    const { rows } = await watcher.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [holder]);
    if (rows[0]) return rows[0].pid;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`nothing waited for backend ${holder}`);
}

/** An open transaction that has written to webhook_outbox: a concurrent index build must wait for it. */
async function openWriter(schema: string): Promise<{ client: pg.Client; pid: number }> {
  const client = await clientOn(schema);
  await client.query('BEGIN');
  await outboxRow(client, 'msg_held_open');
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return { client, pid: rows[0]!.pid };
}

const EXPECTED_DEF = new RegExp(`^CREATE INDEX ${INDEX} ON \\w+\\.webhook_outbox USING btree \\(state, account_id, next_attempt_at, id\\)$`);

afterEach(async () => {
  for (const c of clients.splice(0)) await c.end().catch(() => {});
});

afterAll(async () => {
  for (const db of opened) await db.close().catch(() => {});
  for (const s of schemas) await dropSchema(s);
});

describe('migrations on PostgreSQL', () => {
  it('migrates a new schema to the last version, the outbox index valid', async () => {
    const { db } = await freshSchema();
    expect(await migrate(db)).toEqual(MIGRATIONS.map((m) => m.version));
    expect(await versions(db)).toEqual(MIGRATIONS.map((m) => m.version));
    const [ix, ...more] = await indexState(db);
    expect(more).toEqual([]);
    expect(ix?.valid).toBe(true);
    expect(ix?.def).toMatch(EXPECTED_DEF);
  });

  it('builds the outbox index on a database with data without holding up outbox writes', async () => {
    const { schema, db } = await freshSchema();
    await migrate(db, BEFORE_8);
    // A settlement's transaction that has written an outbox row and not yet committed: any index
    // build on the table waits for it. A plain CREATE INDEX queues a lock that every later write
    // then queues behind; a concurrent build does not.
    const writer = await openWriter(schema);
    const migrating = migrate(db);
    const watcher = await clientOn(schema);
    await blockedBy(watcher, writer.pid);

    const enqueue = await clientOn(schema);
    // Fails with lock_not_available instead of hanging should the insert have to wait for a lock.
    await enqueue.query("SET lock_timeout = '2s'");
    await expect(outboxRow(enqueue, 'msg_during_build')).resolves.toMatchObject({ rowCount: 1 });

    await writer.client.query('COMMIT');
    expect(await migrating).toEqual([8, ...MIGRATIONS.filter((m) => m.version > 8).map((m) => m.version)]);
    expect((await indexState(db))[0]).toMatchObject({ valid: true, def: expect.stringMatching(EXPECTED_DEF) });
    expect((await db.query('SELECT id FROM webhook_outbox ORDER BY id')).map((r) => String(r.id))).toEqual(['msg_during_build', 'msg_held_open']);
  });

  it('drops and builds again an index a concurrent build left invalid', async () => {
    const { schema, db } = await freshSchema();
    await migrate(db, BEFORE_8);
    // A concurrent build cut off part way (here by a statement timeout while it waits for an open
    // writer; in life a failure, a cancel or a killed process) leaves the index in the catalog, invalid.
    const writer = await openWriter(schema);
    const interrupted = await clientOn(schema);
    await interrupted.query("SET statement_timeout = '300ms'");
    await expect(interrupted.query(`CREATE INDEX CONCURRENTLY ${INDEX} ON webhook_outbox (state, account_id, next_attempt_at, id)`)).rejects.toThrow(/statement timeout/);
    await writer.client.query('COMMIT');
    const [left] = await indexState(db);
    expect(left?.valid).toBe(false);

    expect(await migrate(db)).toContain(8);
    const [ix, ...more] = await indexState(db);
    expect(more).toEqual([]);
    expect(ix?.valid).toBe(true);
    expect(ix?.oid).not.toBe(left?.oid);
    expect(ix?.def).toMatch(EXPECTED_DEF);
    expect(await versions(db)).toEqual(MIGRATIONS.map((m) => m.version));
  });

  it('keeps a valid index that a run built but did not record, and records it', async () => {
    const { db } = await freshSchema();
    await migrate(db, BEFORE_8);
    await db.exec(`CREATE INDEX ${INDEX} ON webhook_outbox (state, account_id, next_attempt_at, id)`);
    const [built] = await indexState(db);
    expect(await migrate(db)).toContain(8);
    expect(await indexState(db)).toEqual([built]);
  });

  it('leaves an already migrated database as it is', async () => {
    const { db } = await freshSchema();
    await migrate(db);
    const recorded = await db.query('SELECT version, name, applied_at FROM schema_migrations ORDER BY version');
    const before = await indexState(db);
    expect(await migrate(db)).toEqual([]);
    expect(await db.query('SELECT version, name, applied_at FROM schema_migrations ORDER BY version')).toEqual(recorded);
    expect(await indexState(db)).toEqual(before);
  });

  it('lets one instance migrate at a time: one waiting for another mid-build neither applies anything nor deadlocks', async () => {
    const { schema, db } = await freshSchema();
    await migrate(db, BEFORE_8);
    const writer = await openWriter(schema);
    const first = migrate(db);
    const watcher = await clientOn(schema);
    await blockedBy(watcher, writer.pid);
    // The second instance arrives while the first one's build waits, and is still waiting for the
    // lock when the build goes on to wait out older snapshots.
    const second = migrate(await driverOn(schema));
    await new Promise((r) => setTimeout(r, 300));
    await writer.client.query('COMMIT');
    const [a, b] = await Promise.all([first, second]);
    expect(a).toContain(8);
    expect(b).toEqual([]);
    expect(await versions(db)).toEqual(MIGRATIONS.map((m) => m.version));
    expect((await indexState(db))[0]?.valid).toBe(true);
  });
});
