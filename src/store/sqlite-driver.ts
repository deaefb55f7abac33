import type { CheckpointOptions } from './sqlite-checkpoint-options.js';
import { Checkpointer } from './sqlite-checkpointer.js';
import { mkdirSync, realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Row, SqlDriver, SqlExecutor, SqlSession, SqlValue } from './driver.js';
import type { Mutex } from './mutex.js';
import { acquireFileLock, releaseFileLock } from './sqlite-file-locks.js';
import { WriteHealth } from './sqlite-write-health.js';

type Db = InstanceType<typeof Database>;
type Statement = Database.Statement<unknown[]>;

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
    // SQLite's own wait for another process's lock spins on the calling thread, the event loop: it
    // waits only briefly here, and the driver waits the rest off the loop (SqliteDriver.afterBusy).
    db.pragma(`busy_timeout = ${BUSY_SPIN_MS}`);
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
  return new SqliteDriver(db, key, mutex, Math.max(0, Math.floor(opts.busyTimeoutMs ?? 5000)), checkpointer);
}

/** How long one try of a statement may wait inside SQLite for another process's lock (blocking). */
const BUSY_SPIN_MS = 10;
/** The longest pause between two tries while another process holds the lock. */
const BUSY_PAUSE_MAX_MS = 50;

/** Another process holds the lock the statement needs (SQLITE_BUSY and its extended codes). */
function isBusy(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

class SqliteDriver implements SqlDriver {
  readonly dialect = 'sqlite' as const;
  private readonly statements = new Map<string, Statement>();
  /** Statement runner that ignores the mutex; handed to transaction bodies, which own it. */
  private readonly inside: SqlExecutor;
  private closed = false;
  /** Whether writes have been failing for want of room or a working file (see writesFailing). */
  private readonly health = new WriteHealth();

  constructor(
    private readonly db: Db,
    private readonly lockKey: string | undefined,
    private readonly mutex: Mutex,
    /** How long a statement waits in all for another process's lock before it fails. */
    private readonly busyWaitMs: number,
    private readonly checkpointer?: Checkpointer,
  ) {
    this.inside = {
      query: (sql, params) => attempt(() => this.all(sql, params)),
      run: (sql, params) => attempt(() => this.change(sql, params)),
      exec: (script) => attempt(() => this.script(script)),
    };
  }

  query(sql: string, params?: readonly SqlValue[]): Promise<Row[]> {
    return this.guarded(() => this.all(sql, params));
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.guarded(() => this.change(sql, params));
  }

  exec(script: string): Promise<void> {
    return this.guarded(() => this.script(script));
  }

  /** A full disk fails every write while the write lock can still be taken: /ready asks this too. */
  writesFailing(): boolean {
    return this.health.failing();
  }

  /** One statement under the lock; one that meets another process's lock is tried again off the loop. */
  private guarded<T>(fn: () => T): Promise<T> {
    if (!this.mutex.locked) {
      try {
        return Promise.resolve(fn());
      } catch (e) {
        return isBusy(e) ? this.afterBusy(fn) : Promise.reject(e);
      }
    }
    return this.mutex.runSync(fn).catch((e: unknown) => (isBusy(e) ? this.afterBusy(fn) : Promise.reject(e)));
  }

  /**
   * Tries `fn` again while another process holds the lock it needs, pausing between tries (a timer,
   * so the event loop goes on serving), for at most `busyWaitMs` in all; then its last error stands.
   * The statement lock is held meanwhile, so this process's statements keep their order.
   */
  private async afterBusy<T>(fn: () => T): Promise<T> {
    const release = await this.mutex.acquire();
    try {
      return await this.untilFree(fn);
    } finally {
      release();
    }
  }

  /** `fn` tried until it no longer meets another process's lock, or `waitMs` passed (the caller holds the statement lock). */
  private async untilFree<T>(fn: () => T, waitMs = this.busyWaitMs): Promise<T> {
    const deadline = Date.now() + waitMs;
    for (let wait = 1; ; wait = Math.min(BUSY_PAUSE_MAX_MS, wait * 2)) {
      await pause(Math.min(wait, Math.max(0, deadline - Date.now())));
      try {
        return fn();
      } catch (e) {
        if (!isBusy(e) || Date.now() >= deadline) throw e;
      }
    }
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const release = await this.mutex.acquire();
    try {
      // IMMEDIATE takes the write lock up front: another process cannot sneak in between our
      // read and our write, and we never hit a lock upgrade that could deadlock. Held by another
      // process, it is waited for off the event loop.
      try {
        this.db.exec('BEGIN IMMEDIATE');
      } catch (e) {
        this.health.failed(e);
        if (!isBusy(e)) throw e;
        await this.untilFree(() => this.db.exec('BEGIN IMMEDIATE'));
      }
      try {
        const result = await fn(this.inside);
        this.db.exec('COMMIT');
        this.health.succeeded();
        return result;
      } catch (e) {
        // A full disk may show only at COMMIT, when the WAL grows.
        this.health.failed(e);
        // Some errors (and a failed COMMIT) may already have ended the transaction.
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw e;
      }
    } finally {
      release();
    }
  }

  /**
   * Whether the write lock can be had (`BEGIN IMMEDIATE; ROLLBACK`: nothing is written). Each try
   * waits nothing inside SQLite and holds the statement lock for itself alone, so this process's own
   * statements run between tries; tried again on timers for at most `maxWaitMs`.
   */
  async canTakeWriteLock(maxWaitMs: number): Promise<boolean> {
    const deadline = Date.now() + maxWaitMs;
    for (let wait = 1; ; wait = Math.min(BUSY_PAUSE_MAX_MS, wait * 2)) {
      const release = await this.mutex.acquire();
      try {
        return takeAndDropWriteLock(this.db);
      } catch (e) {
        if (!isBusy(e)) throw e;
      } finally {
        release();
      }
      if (Date.now() >= deadline) return false;
      await pause(Math.min(wait, Math.max(0, deadline - Date.now())));
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
    return this.noted(sql, params, (stmt, args) => {
      if (stmt.reader) return stmt.all(...args) as Row[];
      stmt.run(...args);
      return [];
    });
  }

  private change(sql: string, params: readonly SqlValue[] = []): number {
    return this.noted(sql, params, (stmt, args) => (stmt.reader ? stmt.all(...args).length : stmt.run(...args).changes));
  }

  /** One statement, its outcome told to the write health: a write outside a transaction is on disk once it returns. */
  private noted<T>(sql: string, params: readonly SqlValue[], run: (stmt: Statement, args: ReturnType<typeof bindable>) => T): T {
    return this.health.watch(() => {
      const stmt = this.prepared(sql);
      // A write (INSERT ... RETURNING reads too) gives the checkpoint passes something to do.
      if (!stmt.readonly) this.checkpointer?.wrote();
      const out = run(stmt, bindable(params));
      if (!stmt.readonly && !this.db.inTransaction) this.health.succeeded();
      return out;
    });
  }

  private script(script: string): void {
    this.health.watch(() => this.db.exec(script));
    this.checkpointer?.wrote();
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

function takeAndDropWriteLock(db: Database.Database): true {
  db.pragma('busy_timeout = 0');
  try {
    db.exec('BEGIN IMMEDIATE');
    db.exec('ROLLBACK');
    return true;
  } finally {
    db.pragma(`busy_timeout = ${BUSY_SPIN_MS}`);
  }
}
