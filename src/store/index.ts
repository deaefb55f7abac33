import { join } from 'node:path';
import { errors } from '../core/errors.js';
import type { SqlDriver } from './driver.js';
import { openSqlite } from './sqlite-driver.js';
import { createSqlStore, type SqlStore } from './sql-store.js';

export type { Store } from './types.js';
export type { SqlDriver, SqlExecutor, Dialect } from './driver.js';
export { createSqlStore, type SqlStore } from './sql-store.js';
export { MIGRATIONS, migrate } from './migrations.js';

export interface OpenStoreOptions {
  /** Where `sqlite:` with no path puts its file (gateway.db). */
  dataDir: string;
}

/**
 * Opens the database named by `url` and runs pending migrations:
 *  - `sqlite:PATH` (relative to the process cwd; parent directories are created),
 *    `sqlite::memory:`, or bare `sqlite:` for `<dataDir>/gateway.db`;
 *  - `postgres://...` / `postgresql://...`, optionally `?schema=NAME` to keep every table in that
 *    schema (created when missing).
 */
export async function openStore(url: string, opts: OpenStoreOptions): Promise<SqlStore> {
  const store = createSqlStore(await openDriver(url, opts));
  try {
    await store.migrate();
  } catch (e) {
    await store.close().catch(() => {});
    throw e;
  }
  return store;
}

export async function openDriver(url: string, opts: OpenStoreOptions): Promise<SqlDriver> {
  if (url.startsWith('sqlite:')) {
    let path = url.slice('sqlite:'.length);
    if (path.startsWith('//')) path = path.slice(2);
    return openSqlite(path === '' ? join(opts.dataDir, 'gateway.db') : path);
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    const parsed = new URL(url);
    const schema = parsed.searchParams.get('schema') ?? undefined;
    parsed.searchParams.delete('schema');
    // pg (about 16 MB of RSS) is imported only by a gateway configured for PostgreSQL.
    const { openPostgres } = await import('./pg-driver.js');
    return openPostgres({ connectionString: parsed.toString(), schema });
  }
  // Never echo the URL: it may carry a password.
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0] ?? '(none)';
  throw errors.internal(`Unsupported database URL scheme ${scheme}; use sqlite:PATH or postgres://...`);
}
