import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/store/sqlite-driver.js';

/**
 * Another process holding the database's write lock (the CLI, a backup tool, an operator's sqlite3)
 * makes the server's writes wait. SQLite's own wait spins on the calling thread: with it the event
 * loop stood still for up to five seconds, /health included. The driver now waits off the loop.
 */
const dir = mkdtempSync(join(tmpdir(), 'gw-sqlite-busy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Another process that takes the write lock, says so, and gives it back after `holdMs`. */
function holdWriteLock(path: string, holdMs: number): Promise<{ exited: Promise<unknown> }> {
  const script = `const D = require('better-sqlite3'); const d = new D(process.argv[1]); d.exec('BEGIN IMMEDIATE'); console.log('held');
    setTimeout(() => { d.exec('ROLLBACK'); d.close(); }, Number(process.argv[2]));`;
  const child: ChildProcess = spawn(process.execPath, ['-e', script, path, String(holdMs)], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.stdout!.once('data', () => resolve({ exited }));
  });
}

/** Counts the event loop's timer turns while `work` runs: a loop held by a blocking wait turns a few times at most. */
async function turnsDuring<T>(work: Promise<T>): Promise<{ turns: number; result: PromiseSettledResult<T> }> {
  let turns = 0;
  const timer = setInterval(() => turns++, 10);
  const [result] = await Promise.allSettled([work]);
  clearInterval(timer);
  return { turns, result };
}

describe('SQLite writes while another process holds the write lock', () => {
  it('wait off the event loop, then go through once the lock is given back', async () => {
    const path = join(dir, 'wait.db');
    const db = openSqlite(path, { busyTimeoutMs: 5_000 });
    try {
      await db.exec('CREATE TABLE t (x INTEGER)');
      const holder = await holdWriteLock(path, 1_000);
      const started = Date.now();
      const { turns, result } = await turnsDuring(Promise.all([db.run('INSERT INTO t VALUES (1)'), db.transaction(async (tx) => tx.run('INSERT INTO t VALUES (2)'))]));
      expect(result.status).toBe('fulfilled');
      expect(Date.now() - started).toBeGreaterThanOrEqual(800);
      // About one turn per 10 ms over a second; a loop blocked inside SQLite turns once or twice.
      expect(turns).toBeGreaterThan(20);
      expect(await db.query('SELECT count(*) AS n FROM t')).toEqual([{ n: 2n }]);
      await holder.exited;
    } finally {
      await db.close();
    }
  }, 20_000);

  it('fail after busyTimeoutMs, the loop turning meanwhile, and work again once the lock is free', async () => {
    const path = join(dir, 'fail.db');
    const db = openSqlite(path, { busyTimeoutMs: 300 });
    try {
      await db.exec('CREATE TABLE t (x INTEGER)');
      const holder = await holdWriteLock(path, 1_500);
      const { turns, result } = await turnsDuring(db.run('INSERT INTO t VALUES (1)'));
      expect(result.status).toBe('rejected');
      expect(String((result as PromiseRejectedResult).reason?.code)).toMatch(/^SQLITE_BUSY/);
      expect(turns).toBeGreaterThan(10);
      const tx = await turnsDuring(db.transaction(async (t) => t.run('INSERT INTO t VALUES (2)')));
      expect(tx.result.status).toBe('rejected');
      await holder.exited;
      expect(await db.run('INSERT INTO t VALUES (3)')).toBe(1);
    } finally {
      await db.close();
    }
  }, 20_000);
});
