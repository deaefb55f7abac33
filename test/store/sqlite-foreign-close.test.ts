import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/store/sqlite-driver.js';

/**
 * Closing any descriptor of a file drops every POSIX lock the process holds on it, SQLite's shared
 * lock on the database among them. If the checkpoint passes closed their own descriptor of the
 * database while the serving connection stayed open, another process that then opened and closed
 * the database (a backup, the CLI) took itself for the last user: it checkpointed, deleted the WAL,
 * and the server's later writes went to a deleted file, lost to every other process and to the next start.
 */
const dir = mkdtempSync(join(tmpdir(), 'gw-foreign-close-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** This process's POSIX locks on the file (Linux: /proc/locks lists each with its pid and the file's inode). */
function locksOn(path: string): string[] {
  const inode = statSync(path).ino;
  return readFileSync('/proc/locks', 'utf8')
    .split('\n')
    .filter((line) => line.includes(`:${inode} `) && line.split(/\s+/).includes(String(process.pid)));
}

/** What another process reads: it opens the database, counts the rows, and closes it cleanly. */
function countElsewhere(path: string): number {
  const script = `const D = require('better-sqlite3'); const d = new D(process.argv[1]); const n = d.prepare('SELECT count(*) AS n FROM t').get().n; d.close(); console.log(n);`;
  return Number(execFileSync(process.execPath, ['-e', script, path], { cwd: process.cwd(), encoding: 'utf8' }).trim());
}

describe('the SQLite store and another process on the same file', () => {
  it('keeps its locks through the passes going quiet: another process closing the database loses none of its writes', async () => {
    const path = join(dir, 'shared.db');
    const db = openSqlite(path, { checkpoints: { everyMs: 20, idleMs: 100 } });
    try {
      await db.exec('CREATE TABLE t (x INTEGER)');
      await db.run('INSERT INTO t VALUES (1)');
      const held = locksOn(path);
      expect(held.length).toBeGreaterThan(0);
      // The passes run, then go quiet and close what they opened: the serving connection's lock stays.
      await sleep(600);
      expect((db as unknown as { checkpointer: { running: boolean } }).checkpointer.running).toBe(false);
      expect(locksOn(path)).toEqual(held);
      expect(countElsewhere(path)).toBe(1);
      // The other process closed last-but-one: the WAL the server writes to is still the file's.
      expect(existsSync(`${path}-wal`)).toBe(true);
      await db.run('INSERT INTO t VALUES (2)');
      await db.run('INSERT INTO t VALUES (3)');
      expect(countElsewhere(path)).toBe(3);
      await sleep(600);
      await db.run('INSERT INTO t VALUES (4)');
      expect(countElsewhere(path)).toBe(4);
    } finally {
      await db.close();
    }
    // After the server closed, all of it is in the file.
    expect(countElsewhere(path)).toBe(4);
  }, 30_000);
});
