import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { isStoreOutage } from '../../src/core/errors.js';
import type { SqlDriver } from '../../src/store/driver.js';
import { openSqlite } from '../../src/store/sqlite-driver.js';
import { WRITE_FAILURE_WINDOW_MS } from '../../src/store/sqlite-write-health.js';

/**
 * A database that cannot be written (a full disk: SQLITE_FULL, made real by `PRAGMA max_page_count`)
 * is the store's outage, like a lock held by another process; and since taking the write lock still
 * succeeds on a full disk, the driver remembers that writes have been failing (`writesFailing`, which
 * `/ready` reports) until one succeeds, or for a bounded time with no new failure.
 */
const dir = mkdtempSync(join(tmpdir(), 'gw-sqlite-full-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.useRealTimers());

let n = 0;
/** A database whose next write that needs another page fails with SQLITE_FULL. */
async function fullDatabase(opts: { busyTimeoutMs?: number } = {}): Promise<{ db: SqlDriver; path: string }> {
  const path = join(dir, `full-${++n}.db`);
  const db = openSqlite(path, opts);
  await db.exec('CREATE TABLE t (x BLOB)');
  await db.exec('PRAGMA max_page_count = 1');
  return { db, path };
}
const big = () => Buffer.alloc(20_000, 1).toString('hex');

describe('SQLite that cannot be written', () => {
  it('SQLITE_FULL, I/O, read-only and cannot-open codes are the store outage; others are not', () => {
    for (const code of ['SQLITE_FULL', 'SQLITE_IOERR', 'SQLITE_IOERR_WRITE', 'SQLITE_IOERR_FSYNC', 'SQLITE_READONLY', 'SQLITE_READONLY_DBMOVED', 'SQLITE_CANTOPEN', 'SQLITE_BUSY', 'SQLITE_LOCKED']) {
      expect(isStoreOutage(Object.assign(new Error('x'), { code })), code).toBe(true);
    }
    for (const code of ['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CORRUPT', 'SQLITE_ERROR', 'SQLITE_FULLX', 'SQLITE_MISMATCH']) {
      expect(isStoreOutage(Object.assign(new Error('x'), { code })), code).toBe(false);
    }
  });

  it('a write that finds no room fails with SQLITE_FULL; reads go on, and the store counts as failing for a while with no write succeeding', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { db } = await fullDatabase();
    try {
      expect(db.writesFailing!()).toBe(false);
      const failed = await db.run('INSERT INTO t VALUES (?)', [big()]).catch((e: unknown) => e);
      expect((failed as { code?: string }).code).toBe('SQLITE_FULL');
      expect(isStoreOutage(failed)).toBe(true);
      expect(db.writesFailing!()).toBe(true);
      // Reads still answer and say nothing about writes.
      expect(await db.query('SELECT COUNT(*) AS n FROM t')).toEqual([{ n: 0n }]);
      vi.setSystemTime(Date.now() + WRITE_FAILURE_WINDOW_MS - 1_000);
      expect(db.writesFailing!()).toBe(true);
      vi.setSystemTime(Date.now() + 2_000);
      expect(db.writesFailing!()).toBe(false);
    } finally {
      await db.close();
    }
  });

  it('a transaction that finds no room counts; a write that succeeds once there is room clears it, one inside a rolled-back transaction does not', async () => {
    const { db } = await fullDatabase();
    try {
      const failed = await db.transaction(async (tx) => tx.run('INSERT INTO t VALUES (?)', [big()])).catch((e: unknown) => e);
      expect((failed as { code?: string }).code).toBe('SQLITE_FULL');
      expect(db.writesFailing!()).toBe(true);
      await db.exec('PRAGMA max_page_count = 1073741823');
      // Written, then rolled back: nothing reached the file.
      await db.transaction(async (tx) => {
        await tx.run('INSERT INTO t VALUES (?)', [big()]);
        throw new Error('changed my mind');
      }).catch(() => undefined);
      expect(db.writesFailing!()).toBe(true);
      await db.transaction(async (tx) => tx.run('INSERT INTO t VALUES (?)', [big()]));
      expect(db.writesFailing!()).toBe(false);
      // And a single statement outside a transaction clears it too.
      await db.exec('PRAGMA max_page_count = 1');
      await expect(db.run('INSERT INTO t VALUES (?)', [big()])).rejects.toMatchObject({ code: 'SQLITE_FULL' });
      expect(db.writesFailing!()).toBe(true);
      await db.exec('PRAGMA max_page_count = 1073741823');
      await db.run('INSERT INTO t VALUES (?)', [big()]);
      expect(db.writesFailing!()).toBe(false);
    } finally {
      await db.close();
    }
  });

  it("another process's lock is not counted: the lock probe reports it, and sees it let go", async () => {
    const { db, path } = await fullDatabase({ busyTimeoutMs: 50 });
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    try {
      await expect(db.run('INSERT INTO t VALUES (1)')).rejects.toMatchObject({ code: 'SQLITE_BUSY' });
      expect(db.writesFailing!()).toBe(false);
    } finally {
      other.exec('ROLLBACK');
      other.close();
      await db.close();
    }
  });
});
