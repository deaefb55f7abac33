import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { SqlDriver } from '../../src/store/driver.js';
import { MIGRATIONS, migrate, openDriver, openStore } from '../../src/store/index.js';
import { int } from '../../src/store/rows.js';
import { dropSchema, PG_URL } from './harness.js';

/**
 * Start-up on PostgreSQL while another session holds the migration lock (a stuck instance, an
 * operator's psql): the wait is said at once and then at every interval, naming the lock and its
 * holder's pid, and is given up after a bound with an error that says the same; once the holder
 * lets go, the waiting instance migrates. Before, it waited silently for ever.
 */
const prefix = `migrate_lock_${randomBytes(4).toString('hex')}`;
let n = 0;
const schemas: string[] = [];
const opened: SqlDriver[] = [];
const clients: pg.Client[] = [];

async function freshSchema(): Promise<{ schema: string; db: SqlDriver }> {
  const schema = `${prefix}_${++n}`;
  schemas.push(schema);
  const db = await openDriver(`${PG_URL}?schema=${schema}`, { dataDir: tmpdir() });
  opened.push(db);
  return { schema, db };
}

/** A session of the test's own on `schema` holding that schema's migration lock; its pid. */
async function holdLock(schema: string): Promise<{ client: pg.Client; pid: number }> {
  const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
  client.on('error', () => {});
  await client.connect();
  clients.push(client);
  await client.query("SELECT pg_advisory_lock(hashtext('gateway-migrate:' || current_schema()))");
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return { client, pid: rows[0]!.pid };
}

/** `p`, or 'still waiting' after `ms`: the old runner waited for ever. */
const within = <T>(p: Promise<T>, ms: number) => Promise.race([p, new Promise<'still waiting'>((r) => setTimeout(() => r('still waiting'), ms))]);

afterEach(async () => {
  for (const c of clients.splice(0)) await c.end().catch(() => {});
});

afterAll(async () => {
  for (const db of opened) await db.close().catch(() => {});
  for (const s of schemas) await dropSchema(s);
});

describe('a migration lock held by another session', () => {
  it('is waited for, said at every interval with its holder, and given up after the bound', async () => {
    const { schema, db } = await freshSchema();
    const holder = await holdLock(schema);
    const said: string[] = [];
    const at = Date.now();
    const outcome = await within(
      migrate(db, MIGRATIONS, { lockTimeoutMs: 1_500, lockNoticeEveryMs: 500, onLockWait: (m) => said.push(m) }).catch((e: unknown) => e),
      10_000,
    );
    expect(outcome).toBeInstanceOf(Error);
    const message = (outcome as Error).message;
    expect(message).toMatch(/^Gave up after 1\.\d s waiting for the PostgreSQL migration lock/);
    expect(message).toContain(`schema ${schema}, advisory lock `);
    expect(message).toContain(`held by pid ${holder.pid}`);
    expect(message).toContain('migration_lock_timeout_ms');
    expect(Date.now() - at).toBeGreaterThanOrEqual(1_500);
    // At once, then every 500 ms: 0, 0.5, 1.0 (and 1.5 s at most).
    expect(said.length).toBeGreaterThanOrEqual(3);
    expect(said.length).toBeLessThanOrEqual(4);
    for (const line of said) expect(line).toMatch(new RegExp(`^waiting for the PostgreSQL migration lock \\(schema ${schema}, advisory lock -?\\d+, held by pid ${holder.pid}\\)`));
    // Nothing was applied.
    expect(await db.query(`SELECT 1 FROM pg_tables WHERE schemaname = ? AND tablename = 'accounts'`, [schema])).toEqual([]);
  }, 30_000);

  it('migrates once the holder lets go', async () => {
    const { schema, db } = await freshSchema();
    const holder = await holdLock(schema);
    const said: string[] = [];
    const running = migrate(db, MIGRATIONS, { lockTimeoutMs: 20_000, onLockWait: (m) => said.push(m) });
    for (let i = 0; i < 200 && said.length === 0; i++) await new Promise((r) => setTimeout(r, 25));
    expect(said).toHaveLength(1);
    await holder.client.query('SELECT pg_advisory_unlock_all()');
    expect(await within(running, 10_000)).toEqual(MIGRATIONS.map((m) => m.version));
    const rows = await db.query('SELECT version FROM schema_migrations ORDER BY version');
    expect(rows.map((r) => int(r.version))).toEqual(MIGRATIONS.map((m) => m.version));
  }, 30_000);

  it('takes the bound from the database URL (migration_lock_timeout_ms) and tells the caller of openStore', async () => {
    const { schema } = await freshSchema();
    const holder = await holdLock(schema);
    const said: string[] = [];
    const outcome = await within(
      openStore(`${PG_URL}?schema=${schema}&migration_lock_timeout_ms=700`, { dataDir: tmpdir(), onLockWait: (m) => said.push(m) }).catch((e: unknown) => e),
      10_000,
    );
    expect(outcome).toBeInstanceOf(Error);
    // Named as every start-up error of the database is: the setting first.
    expect((outcome as Error).message).toMatch(/^database: cannot open the PostgreSQL database .*: Gave up after 0\.\d s waiting for the PostgreSQL migration lock .*held by pid /);
    expect(said).toHaveLength(1);
    expect(said[0]).toContain(`held by pid ${holder.pid}`);
  }, 30_000);
});
