import { join, resolve } from 'node:path';
import { errors } from '../core/errors.js';
import type { SqlDriver } from './driver.js';
import { openSqlite } from './sqlite-driver.js';
import { createSqlStore, type SqlStore } from './sql-store.js';

export type { Store } from './types.js';
export type { SqlDriver, SqlExecutor, Dialect } from './driver.js';
export { createSqlStore, type SqlStore } from './sql-store.js';
export { MIGRATIONS } from './migrations.js';
export { migrate, MIGRATION_LOCK_TIMEOUT_MS } from './migrate.js';

export interface OpenStoreOptions {
  /** Where `sqlite:` with no path puts its file (gateway.db). */
  dataDir: string;
  /** PostgreSQL: told while start-up waits for another session's migration lock (store/migrate.ts). */
  onLockWait?: (message: string) => void;
}

/**
 * Opens the database named by `url` and runs pending migrations:
 *  - `sqlite:PATH` (relative to the process cwd; parent directories are created),
 *    `sqlite::memory:`, or bare `sqlite:` for `<dataDir>/gateway.db`;
 *  - `postgres://...` / `postgresql://...`, optionally `?schema=NAME` to keep every table in that
 *    schema (created when missing), and `migration_lock_timeout_ms` for how long to wait for
 *    another session's migration lock.
 */
export async function openStore(url: string, opts: OpenStoreOptions): Promise<SqlStore> {
  // Named by the setting and what it points at: "unable to open database file" alone says neither.
  const cannot = (e: unknown) => new Error(`database: cannot open ${databaseNamed(url, opts)}: ${(e as Error)?.message ?? String(e)}`, { cause: e });
  let store: SqlStore;
  let lockTimeoutMs: number | undefined;
  try {
    lockTimeoutMs = isPostgres(url) ? msParam(new URL(url), 'migration_lock_timeout_ms') : undefined;
    store = createSqlStore(await openDriver(url, opts));
  } catch (e) {
    throw cannot(e);
  }
  try {
    await store.migrate({ lockTimeoutMs, onLockWait: opts.onLockWait });
  } catch (e) {
    await store.close().catch(() => {});
    throw cannot(e);
  }
  return store;
}

/** The database `url` names, for an error: a SQLite file by its full path, a PostgreSQL URL without its password or parameters. */
export function databaseNamed(url: string, opts: OpenStoreOptions): string {
  if (url.startsWith('sqlite:')) {
    const path = sqlitePath(url, opts);
    return path === ':memory:' ? 'the in-memory SQLite database' : `the SQLite file ${resolve(path)}`;
  }
  if (isPostgres(url)) {
    try {
      const u = new URL(url);
      return `the PostgreSQL database ${u.protocol}//${u.username ? `${u.username}@` : ''}${u.host}${u.pathname}`;
    } catch {
      return 'the PostgreSQL database (its URL does not parse)';
    }
  }
  return 'the database';
}

function sqlitePath(url: string, opts: OpenStoreOptions): string {
  let path = url.slice('sqlite:'.length);
  if (path.startsWith('//')) path = path.slice(2);
  return path === '' ? join(opts.dataDir, 'gateway.db') : path;
}

const isPostgres = (url: string) => url.startsWith('postgres://') || url.startsWith('postgresql://');

/** A whole number of milliseconds from the database URL's query string (the gateway's own parameters). */
function msParam(url: URL, name: string): number | undefined {
  const raw = url.searchParams.get(name);
  if (raw === null) return undefined;
  if (!/^\d{1,9}$/.test(raw) || Number(raw) === 0) throw errors.internal(`The database URL's ${name} must be a positive whole number of milliseconds.`);
  return Number(raw);
}

export async function openDriver(url: string, opts: OpenStoreOptions): Promise<SqlDriver> {
  if (url.startsWith('sqlite:')) return openSqlite(sqlitePath(url, opts));
  if (isPostgres(url)) {
    const parsed = new URL(url);
    const schema = parsed.searchParams.get('schema') ?? undefined;
    const connectTimeoutMs = msParam(parsed, 'connect_timeout_ms');
    const queryTimeoutMs = msParam(parsed, 'query_timeout_ms');
    for (const own of ['schema', 'connect_timeout_ms', 'query_timeout_ms', 'migration_lock_timeout_ms']) parsed.searchParams.delete(own);
    // pg (about 16 MB of RSS) is imported only by a gateway configured for PostgreSQL.
    const { openPostgres } = await import('./pg-driver.js');
    return openPostgres({ connectionString: parsed.toString(), schema, connectTimeoutMs, queryTimeoutMs });
  }
  // Never echo the URL: it may carry a password.
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0] ?? '(none)';
  throw errors.internal(`Unsupported database URL scheme ${scheme}; use sqlite:PATH or postgres://...`);
}
