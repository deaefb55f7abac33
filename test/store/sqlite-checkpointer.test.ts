import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { Checkpointer } from '../../src/store/sqlite-checkpointer.js';
import { openSqlite } from '../../src/store/sqlite-driver.js';

/**
 * The checkpoint worker runs while there is something to checkpoint: a write starts it, it copies
 * the WAL into the database file, and it leaves after a quiet spell; the next write starts another.
 * In WAL mode the database file grows only when a checkpoint copies pages into it, so its size
 * says whether one ran.
 */
const dir = mkdtempSync(join(tmpdir(), 'gw-checkpointer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  for (const end = Date.now() + ms; !check(); await sleep(20)) if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
}

/** A connection set up as the driver sets up its own: WAL, no automatic checkpoints. */
function connection(name: string): { db: Database.Database; path: string; fileSize: () => number } {
  const path = join(dir, name);
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec('CREATE TABLE t (x BLOB)');
  return { db, path, fileSize: () => statSync(path).size };
}

describe('SQLite checkpoint worker', () => {
  it('starts on a write, checkpoints, leaves when quiet, and starts again on the next write', async () => {
    const { db, path, fileSize } = connection('cycle.db');
    const failures: number[] = [];
    const cp = new Checkpointer(path, () => failures.push(1), { everyMs: 50, idleMs: 200 });
    expect(cp.running).toBe(false);
    const insert = db.prepare('INSERT INTO t VALUES (randomblob(100000))');

    const before = fileSize();
    insert.run();
    cp.wrote();
    expect(cp.running).toBe(true);
    await until('the first rows in the database file', () => fileSize() > before + 50_000);
    await until('the worker leaving', () => !cp.running);

    const between = fileSize();
    insert.run();
    cp.wrote();
    expect(cp.running).toBe(true);
    await until('the second rows in the database file', () => fileSize() > between + 50_000);
    await cp.stop();
    expect(cp.running).toBe(false);
    expect(failures).toEqual([]);
    db.close();
  }, 30_000);

  it('a write while the worker leaves starts the next one', async () => {
    const { db, path, fileSize } = connection('leaving.db');
    const cp = new Checkpointer(path, () => undefined, { everyMs: 20, idleMs: 40 });
    const insert = db.prepare('INSERT INTO t VALUES (randomblob(100000))');
    cp.wrote();
    // The moment the worker is told to leave (its quiet spell is over), a write arrives.
    const worker = (cp as unknown as { worker: { postMessage: (m: unknown) => void } }).worker;
    const post = worker.postMessage.bind(worker);
    let before = 0;
    let written = false;
    worker.postMessage = (m) => {
      post(m);
      before = fileSize();
      insert.run();
      cp.wrote();
      written = true;
    };
    await until('the write as the worker leaves', () => written);
    await until('the rows in the database file', () => fileSize() > before + 50_000);
    await cp.stop();
    db.close();
  }, 30_000);

  it('is not started by reads through the driver, and is by a write', async () => {
    const driver = openSqlite(join(dir, 'driver.db'));
    const checkpointer = (driver as unknown as { checkpointer: Checkpointer }).checkpointer;
    await driver.query('SELECT 1 AS one');
    expect(checkpointer.running).toBe(false);
    await driver.run('CREATE TABLE t (x INTEGER)');
    expect(checkpointer.running).toBe(true);
    await driver.close();
    expect(checkpointer.running).toBe(false);
  });

  it('keeps the WAL bounded under writes that never pause (a passive checkpoint alone never lets it start over)', async () => {
    const { db, path } = connection('steady.db');
    const walSize = () => statSync(`${path}-wal`).size;
    const restartFrames = 400;
    const cp = new Checkpointer(path, () => undefined, { everyMs: 20, idleMs: 10_000, restartFrames });
    const insert = db.prepare('INSERT INTO t VALUES (randomblob(3000))');
    // A commit every millisecond or so, about the benchmark's rate of WAL writes: there is nearly
    // always a write in flight while one of the worker's checkpoints runs, as under steady traffic.
    let largest = 0;
    let commits = 0;
    // Enough commits for several restarts, however busy the machine (the cap only ends a broken run).
    const cap = Date.now() + 25_000;
    while (commits < 6 * restartFrames && Date.now() < cap) {
      insert.run();
      cp.wrote();
      commits++;
      largest = Math.max(largest, walSize());
      await sleep(1);
    }
    await cp.stop();
    db.close();
    // Each commit of a 3 KB row appends a frame or two of 4 KB: without restarts the WAL would hold
    // every frame of the run; with them it never holds many more than restartFrames.
    expect(commits).toBeGreaterThan(4 * restartFrames);
    expect(largest).toBeLessThan(3 * restartFrames * 4_200);
  }, 30_000);

  it('runs its RESTARTs while the store holds its statements: no write of this process ever meets one', async () => {
    // With no busy timeout a write that met a RESTART would fail with SQLITE_BUSY at once instead
    // of waiting in SQLite's busy handler, where it would freeze the event loop for as long.
    const path = join(dir, 'held.db');
    const restartFrames = 300;
    const driver = openSqlite(path, { busyTimeoutMs: 0, checkpoints: { everyMs: 10, restartFrames } });
    await driver.exec('CREATE TABLE t (x BLOB)');
    const walSize = () => statSync(`${path}-wal`).size;
    let largest = 0;
    let commits = 0;
    const failures: string[] = [];
    const cap = Date.now() + 25_000;
    while (commits < 6 * restartFrames && Date.now() < cap) {
      // Several statements in flight at once, as under traffic: some wait for the held lock.
      const writes = [1, 2, 3].map(() => driver.run('INSERT INTO t VALUES (randomblob(3000))').then(() => commits++, (e: Error) => failures.push(e.message)));
      await Promise.all(writes);
      largest = Math.max(largest, walSize());
      await sleep(1);
    }
    await driver.close();
    expect(failures).toEqual([]);
    expect(commits).toBeGreaterThan(4 * restartFrames);
    // Bounded as before: the RESTARTs still ran.
    expect(largest).toBeLessThan(3 * restartFrames * 4_200);
  }, 30_000);

  it('releases every hold it takes exactly once, a stop in the middle included', async () => {
    const { db, path } = connection('holds.db');
    let taken = 0;
    let released = 0;
    const hold = () => {
      taken++;
      let done = false;
      return Promise.resolve(() => {
        if (!done) released++;
        done = true;
      });
    };
    const cp = new Checkpointer(path, () => undefined, { everyMs: 5, restartFrames: 50, hold });
    const insert = db.prepare('INSERT INTO t VALUES (randomblob(3000))');
    // Until a few RESTARTs have run, however busy the machine (the cap only ends a broken run): a
    // wall-clock window saw only two of them on a loaded CI machine.
    for (const cap = Date.now() + 25_000; taken < 4 && Date.now() < cap; await sleep(1)) {
      insert.run();
      cp.wrote();
    }
    await cp.stop();
    db.close();
    expect(taken).toBeGreaterThan(2);
    expect(released).toBe(taken);
  }, 30_000);
});
