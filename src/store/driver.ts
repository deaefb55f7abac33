/**
 * The narrow SQL surface the store is written against. Both drivers take `?` placeholders;
 * the PostgreSQL driver rewrites them once per SQL string with `toDollarParams`.
 */
export type Dialect = 'sqlite' | 'postgres';

export type SqlValue = string | number | null;
export type Row = Record<string, unknown>;

export interface SqlExecutor {
  /** Runs one statement and returns its rows (empty for statements without RETURNING). */
  query(sql: string, params?: readonly SqlValue[]): Promise<Row[]>;
  /** Runs one statement and returns the number of rows it changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>;
  /** Runs a parameterless script that may hold several statements (DDL). */
  exec(script: string): Promise<void>;
}

/** One connection held for a piece of work: statements outside any transaction, or in one it opens. */
export interface SqlSession extends SqlExecutor {
  /** As `SqlDriver.transaction`, on the session's connection. */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
}

export interface SqlDriver extends SqlExecutor {
  readonly dialect: Dialect;
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws.
   * Inside `fn` use only `tx`; calling the driver itself from there waits for the
   * transaction to end, i.e. forever.
   */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` on a connection of its own, for work that must not run inside a transaction or must
   * hold a session-level lock across several (the migrations on PostgreSQL: CREATE INDEX
   * CONCURRENTLY). PostgreSQL opens a connection outside the pool, without the pool's statement
   * timeout, and closes it after; SQLite has one connection, and `fn` runs on the driver itself.
   */
  session<T>(fn: (s: SqlSession) => Promise<T>): Promise<T>;
  /**
   * SQLite only: whether the database's one write lock can be taken within `maxWaitMs`, taken and
   * given back at once with nothing written. Another process holding it (an operator's open
   * `BEGIN IMMEDIATE`) fails every write while reads go on. PostgreSQL has no such lock.
   */
  canTakeWriteLock?(maxWaitMs: number): Promise<boolean>;
  /**
   * SQLite only: whether a write failed lately because the file cannot be written (disk full,
   * read-only, I/O error) and none has succeeded since (sqlite-write-health.ts). PostgreSQL's
   * outages surface as failed connections instead.
   */
  writesFailing?(): boolean;
  close(): Promise<void>;
}

export type ConstraintKind = 'unique' | 'foreign_key';

/** Recognises constraint violations from either driver (SQLite extended codes, PostgreSQL SQLSTATE). */
export function constraintKind(err: unknown): ConstraintKind | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  if (code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    return 'unique';
  }
  if (code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return 'foreign_key';
  return undefined;
}

/**
 * Rewrites `?` placeholders as `$1, $2, ...`. Question marks inside quoted literals, quoted
 * identifiers and comments are left alone, so a literal '?' in SQL text cannot shift the numbering.
 */
export function toDollarParams(sql: string): string {
  let out = '';
  let n = 0;
  let i = 0;
  while (i < sql.length) {
    const c = sql[i];
    if (c === "'" || c === '"') {
      const end = closingQuote(sql, i, c);
      out += sql.slice(i, end);
      i = end;
    } else if (c === '-' && sql[i + 1] === '-') {
      const nl = sql.indexOf('\n', i);
      const end = nl === -1 ? sql.length : nl;
      out += sql.slice(i, end);
      i = end;
    } else if (c === '/' && sql[i + 1] === '*') {
      const close = sql.indexOf('*/', i + 2);
      const end = close === -1 ? sql.length : close + 2;
      out += sql.slice(i, end);
      i = end;
    } else if (c === '?') {
      out += `$${++n}`;
      i++;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Index just past the quote that closes the literal opened at `start` (doubled quotes escape). */
function closingQuote(sql: string, start: number, quote: string): number {
  let i = start + 1;
  while (i < sql.length) {
    if (sql[i] === quote) {
      if (sql[i + 1] === quote) {
        i += 2;
        continue;
      }
      return i + 1;
    }
    i++;
  }
  return sql.length;
}
