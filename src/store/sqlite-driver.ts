import type { CheckpointOptions } from './sqlite-checkpoint-options.js';
import { Checkpointer } from './sqlite-checkpointer.js';
import { mkdirSync, realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Row, SqlDriver, SqlExecutor, SqlSession, SqlValue } from './driver.js';
import { Mutex } from './mutex.js';

type Db = InstanceType<typeof Database>;
type Statement = Database.Statement<unknown[]>;

/**
 * One mutex per database file for the whole process: two connections to the same file in one
 * process would otherwise block each other inside SQLite's busy handler, which runs on the
 * very thread the other connection needs in order to finish.
 */
const fileLocks = new Map<string, { mutex: Mutex; users: number }>();

/** The per-connection page cache (KiB); see openSqlite. */
const SQLITE_CACHE_KIB = 4096;

export interface SqliteOptions {
  /** How long a connection waits for another process's write lock (ms). */
  busyTimeoutMs?: number;
  /** Checkpoint tuning (see sqlite-checkpointer.ts); the defaults suit production. */
  checkpoints?: Omit<CheckpointOptions, 'hold'>;
}

export function openSqlite(path: string, opts: SqliteOptions = {}): SqlDriver {
  const memory = path === ':memory:';
  let lockKey = path;
  if (!memory) {
    const abs = resolve(path);
    mkdirSync(dirname(abs), { recursive: true });
    lockKey = abs;
  }
  const db = new Database(path);
  try {
    if (!memory) lockKey = realpathSync(lockKey);
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(opts.busyTimeoutMs ?? 5000))}`);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    // SQLite's own page cache counts in the process's RSS; better-sqlite3 builds it at 16 MB per
    // connection, which a store of 100,000 jobs read at random fills without gaining hits (a poll
    // reads a few pages of one row). The file stays in the OS page cache, outside the process, so
    // a miss is a pread from memory. 4 MB keeps the tables' and indexes' upper pages resident; 1 MB
    // saved ~3.7 MB under ledger writes but read more CPU per embeddings request (bench/README.md).
    db.pragma(`cache_size = -${SQLITE_CACHE_KIB}`);
    // File databases checkpoint with their syncs off the event loop instead (see sqlite-checkpointer.ts).
    if (!memory) {
      db.pragma('wal_autocheckpoint = 0');
      // After a checkpoint, a WAL file that grew in a burst is cut back to this size.
      db.pragma('journal_size_limit = 67108864');
    }
    // Integers come back as BigInt so that values past 2^53 are detected instead of rounded.
    db.defaultSafeIntegers(true);
  } catch (e) {
    db.close();
    throw e;
  }
  const key = memory ? undefined : lockKey;
  const mutex = acquireFileLock(key);
  // The passes that let the WAL start over run while this file's statement lock is held, so no
  // statement of ours waits inside SQLite for one.
  const checkpointer = memory ? undefined : new Checkpointer(path, { ...opts.checkpoints, hold: () => mutex.acquire() });
  return new SqliteDriver(db, key, mutex, checkpointer);
}

class SqliteDriver implements SqlDriver {
  readonly dialect = 'sqlite' as const;
  private readonly statements = new Map<string, Statement>();
  /** Statement runner that ignores the mutex; handed to transaction bodies, which own it. */
  private readonly inside: SqlExecutor;
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly lockKey: string | undefined,
    private readonly mutex: Mutex,
    private readonly checkpointer?: Checkpointer,
  ) {
    this.inside = {
      query: (sql, params) => attempt(() => this.all(sql, params)),
      run: (sql, params) => attempt(() => this.change(sql, params)),
      exec: (script) => attempt(() => {
        this.db.exec(script);
        this.checkpointer?.wrote();
      }),
    };
  }

  query(sql: string, params?: readonly SqlValue[]): Promise<Row[]> {
    return this.mutex.runSync(() => this.all(sql, params));
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.mutex.runSync(() => this.change(sql, params));
  }

  exec(script: string): Promise<void> {
    return this.mutex.runSync(() => {
      this.db.exec(script);
      this.checkpointer?.wrote();
    });
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const release = await this.mutex.acquire();
    try {
      // IMMEDIATE takes the write lock up front: another process cannot sneak in between our
      // read and our write, and we never hit a lock upgrade that could deadlock.
      this.db.exec('BEGIN IMMEDIATE');
      try {
        const result = await fn(this.inside);
        this.db.exec('COMMIT');
        return result;
      } catch (e) {
        // Some errors (and a failed COMMIT) may already have ended the transaction.
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw e;
      }
    } finally {
      release();
    }
  }

  /** One connection already: the session is the driver itself (its statements and transactions take the file's lock). */
  session<T>(fn: (s: SqlSession) => Promise<T>): Promise<T> {
    return fn(this);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.checkpointer?.stop();
    // Wait for a running transaction to finish before pulling the connection away.
    const release = await this.mutex.acquire();
    try {
      this.statements.clear();
      this.db.close();
      // Only now: closing them while the connection was open would have dropped its file locks.
      this.checkpointer?.closeFiles();
    } finally {
      release();
      releaseFileLock(this.lockKey);
    }
  }

  private prepared(sql: string): Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare<unknown[]>(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  private all(sql: string, params: readonly SqlValue[] = []): Row[] {
    const stmt = this.prepared(sql);
    const args = bindable(params);
    // A write (INSERT ... RETURNING reads too) gives the checkpoint passes something to do.
    if (!stmt.readonly) this.checkpointer?.wrote();
    if (stmt.reader) return stmt.all(...args) as Row[];
    stmt.run(...args);
    return [];
  }

  private change(sql: string, params: readonly SqlValue[] = []): number {
    const stmt = this.prepared(sql);
    const args = bindable(params);
    if (!stmt.readonly) this.checkpointer?.wrote();
    if (stmt.reader) return stmt.all(...args).length;
    return stmt.run(...args).changes;
  }
}

/**
 * better-sqlite3 binds every JS number as a REAL; whole numbers go in as 64-bit integers instead,
 * so money arithmetic such as `balance - ?` stays integer arithmetic inside SQLite.
 */
function bindable(params: readonly SqlValue[]): Array<string | number | bigint | null> {
  return params.map((v) => (typeof v === 'number' && Number.isSafeInteger(v) ? BigInt(v) : v));
}

function attempt<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (e) {
    return Promise.reject(e);
  }
}

function acquireFileLock(key: string | undefined): Mutex {
  if (key === undefined) return new Mutex();
  let entry = fileLocks.get(key);
  if (!entry) {
    entry = { mutex: new Mutex(), users: 0 };
    fileLocks.set(key, entry);
  }
  entry.users++;
  return entry.mutex;
}

function releaseFileLock(key: string | undefined): void {
  if (key === undefined) return;
  const entry = fileLocks.get(key);
  if (entry && --entry.users <= 0) fileLocks.delete(key);
}
