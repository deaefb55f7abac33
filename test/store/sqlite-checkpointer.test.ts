import { readdirSync, readlinkSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { Checkpointer } from '../../src/store/sqlite-checkpointer.js';
import { openSqlite } from '../../src/store/sqlite-driver.js';

/**
 * Checkpoint passes run while there is something to checkpoint: a write schedules them, they copy
 * the WAL into the database file, and they stop after a quiet spell; the next write schedules them
 * again. In WAL mode the database file grows only when a checkpoint copies pages into it, so its
 * size says whether one ran.
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

describe('SQLite checkpoints', () => {
  it('starts on a write, checkpoints, leaves when quiet, and starts again on the next write', async () => {
    const { db, path, fileSize } = connection('cycle.db');
    const cp = new Checkpointer(path, { everyMs: 50, idleMs: 200 });
    expect(cp.running).toBe(false);
    const insert = db.prepare('INSERT INTO t VALUES (randomblob(100000))');

    const before = fileSize();
    // Descriptors open on this database's files: the test's own connection's, then the passes' too.
    const opened = () => readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`).startsWith(path);
      } catch {
        return false;
      }
    }).length;
    const idle = opened();
    insert.run();
    cp.wrote();
    expect(cp.running).toBe(true);
    expect(opened()).toBeGreaterThan(idle);
    await until('the first rows in the database file', () => fileSize() > before + 50_000);
    await until('the passes stopping', () => !cp.running);
    // Quiet: the passes' connections are given back until the next write; the two files they sync stay
    // open until the store closes, as closing one would drop the serving connection's locks. (SQLite
    // keeps a closed connection's descriptor while another connection of the process holds locks on
    // the file, and reuses it for the next one: so the count must not grow from one quiet spell to
    // the next.)
    const quiet = opened();
    expect((cp as unknown as { handles?: unknown }).handles).toBeUndefined();

    const between = fileSize();
    insert.run();
    cp.wrote();
    expect(cp.running).toBe(true);
    await until('the second rows in the database file', () => fileSize() > between + 50_000);
    await until('the passes stopping again', () => !cp.running);
    expect(opened()).toBe(quiet);
    await cp.stop();
    expect(cp.running).toBe(false);
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

  it('runs the passes that let the WAL start over while the store holds its statements: no write meets one', async () => {
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
    // Bounded as before: the held passes ran.
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
    const cp = new Checkpointer(path, { everyMs: 5, restartFrames: 50, hold });
    const insert = db.prepare('INSERT INTO t VALUES (randomblob(3000))');
    // Until a few held passes have run, however busy the machine (the cap only ends a broken run): a
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

  it('backs off holding the statements while a reader outside keeps frames back, and restarts the WAL once it is gone', async () => {
    const { db, path } = connection('reader.db');
    const insert = db.prepare('INSERT INTO t VALUES (randomblob(3000))');
    let taken = 0;
    const hold = () => {
      taken++;
      return Promise.resolve(() => undefined);
    };
    let passes = 0;
    const cp = new Checkpointer(path, { everyMs: 5, idleMs: 60_000, restartFrames: 50, hold });
    const inner = cp as unknown as { afterPass: (r: unknown) => void };
    const after = inner.afterPass.bind(cp);
    inner.afterPass = (r) => {
      if (r) passes++;
      after(r);
    };
    // A snapshot held open, as a backup or a `sqlite3` prompt in another process would hold it.
    const reader = new Database(path);
    reader.exec('BEGIN');
    reader.prepare('SELECT count(*) FROM t').get();
    try {
      for (let i = 0; i < 80; i++) insert.run();
      cp.wrote();
      // Writes go on while the WAL stays past restartFrames; the passes cannot copy past the reader.
      for (const cap = Date.now() + 25_000; passes < 60 && Date.now() < cap; await sleep(2)) insert.run();
      expect(passes).toBeGreaterThanOrEqual(60);
      // Back-off doubles from 10 ms up to 320 ms: a handful of held passes, not one per pass.
      expect(taken).toBeGreaterThan(0);
      expect(taken).toBeLessThan(15);
    } finally {
      reader.exec('COMMIT');
      reader.close();
    }
    // The reader gone, a held pass copies everything within the back-off's cap and the WAL starts over.
    const walFrames = () => Math.max(0, (statSync(`${path}-wal`).size - 32) / (4096 + 24));
    const heldBefore = taken;
    await until('a held pass after the reader left', () => taken > heldBefore);
    await until('the WAL started over', () => {
      insert.run();
      const log = (db.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>)[0]!.log;
      return log < 50;
    });
    expect(walFrames()).toBeGreaterThan(0);
    await cp.stop();
    db.close();
  }, 40_000);

  describe('the order of a pass, with the syncs off the event loop', () => {
    /** Which file a descriptor is open on: the WAL or the database file. */
    const fileOf = (fd: number) => (readlinkSync(`/proc/self/fd/${fd}`).endsWith('-wal') ? 'wal' : 'db');
    /** The WAL's frame count, from its size (a 32-byte header, then 24-byte headers before 4 KB pages). */
    const frames = (path: string) => Math.max(0, (statSync(`${path}-wal`).size - 32) / (4096 + 24));
    type Pass = { log: number; checkpointed: number };
    const lastPass = (cp: Checkpointer) => (cp as unknown as { last?: Pass }).last;
    /** Every pass's result, in order (the checkpointer keeps only the last). */
    function passesOf(cp: Checkpointer): Pass[] {
      const seen: Pass[] = [];
      const inner = cp as unknown as { afterPass: (r: Pass | undefined) => void };
      const after = inner.afterPass.bind(cp);
      inner.afterPass = (r) => {
        if (r) seen.push(r);
        after(r);
      };
      return seen;
    }
    /** The WAL's frame count as SQLite sees it (a passive checkpoint reports it; it copies nothing the pin guards). */
    const walLog = (db: Database.Database) => (db.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>)[0].log;

    it('syncs the WAL before copying and copies no frame written after the sync began', async () => {
      const { db, path } = connection('order.db');
      const insert = db.prepare('INSERT INTO t VALUES (randomblob(3000))');
      for (let i = 0; i < 20; i++) insert.run();
      const steps: string[] = [];
      let pinnedAt = -1;
      const sync = async (fd: number) => {
        const file = fileOf(fd);
        steps.push(`sync ${file}`);
        if (file === 'wal' && pinnedAt < 0) {
          pinnedAt = frames(path);
          // Commits land while the WAL's sync is on the threadpool: they must wait for the next pass.
          for (let i = 0; i < 20; i++) insert.run();
          await sleep(20);
        }
      };
      const cp = new Checkpointer(path, { everyMs: 30, idleMs: 60_000, sync });
      const passes = passesOf(cp);
      cp.wrote();
      await until('a pass', () => passes.length > 0);
      const first = passes[0];
      expect(steps.slice(0, 2)).toEqual(['sync wal', 'sync db']);
      expect(first.log).toBeGreaterThan(pinnedAt);
      expect(first.checkpointed).toBe(pinnedAt);
      // The next pass takes the rest.
      await until('the rest copied', () => lastPass(cp)!.checkpointed === lastPass(cp)!.log);
      await cp.stop();
      db.close();
      const reopened = new Database(path);
      expect(reopened.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(reopened.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 40 });
      reopened.close();
    }, 30_000);

    it('a slow sync holds no statement, and the WAL does not start over until the database file is synced', async () => {
      // A write that waited for the sync would take most of it: the sync lasts long enough, and the
      // bound on a write is loose enough, that a busy machine (slow to see the sync begin, slow to
      // run each write) still leaves the two far apart.
      const SLOW_SYNC_MS = 2_000;
      const path = join(dir, 'slow-sync.db');
      let slow = false;
      let dbSyncs = 0;
      const sync = async (fd: number) => {
        if (fileOf(fd) === 'db') dbSyncs++;
        if (slow && fileOf(fd) === 'db') await sleep(SLOW_SYNC_MS);
      };
      const driver = openSqlite(path, { checkpoints: { everyMs: 20, idleMs: 60_000, sync } });
      await driver.exec('CREATE TABLE t (x BLOB)');
      for (let i = 0; i < 10; i++) await driver.run('INSERT INTO t VALUES (randomblob(3000))');
      await until('a first pass', () => dbSyncs > 0);
      slow = true;
      const syncsBefore = dbSyncs;
      await until('a pass waiting on the slow sync', () => dbSyncs > syncsBefore);
      // While the database file's sync is pending, writes go on at once: nothing waits for it.
      const took: number[] = [];
      const walBefore = frames(path);
      for (let i = 0; i < 20; i++) {
        const t0 = performance.now();
        await driver.run('INSERT INTO t VALUES (randomblob(3000))');
        took.push(performance.now() - t0);
      }
      expect(Math.max(...took)).toBeLessThan(SLOW_SYNC_MS / 4);
      // And they were appended, not written over the copied frames: the WAL only grew.
      expect(frames(path)).toBeGreaterThan(walBefore);
      await driver.close();
      const reopened = new Database(path);
      expect(reopened.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(reopened.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 30 });
      reopened.close();
    }, 30_000);

    it('a failed sync of the database file after a copy stops the passes for good and keeps the pin: the WAL never starts over', async () => {
      const { db, path } = connection('failing-sync.db');
      const insert = db.prepare('INSERT INTO t VALUES (randomblob(3000))');
      let dbSyncs = 0;
      const sync = async (fd: number) => {
        if (fileOf(fd) === 'db') {
          dbSyncs++;
          throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
        }
      };
      const failures: Error[] = [];
      const cp = new Checkpointer(path, { everyMs: 20, idleMs: 60_000, sync, onSyncFailure: (e) => failures.push(e) });
      const passes = passesOf(cp);
      for (let i = 0; i < 10; i++) insert.run();
      cp.wrote();
      await until('the failed sync reported', () => failures.length > 0);
      // A retried sync could report success without writing the pages the kernel dropped: no retry.
      await sleep(200);
      expect(failures.map((e) => e.message)).toEqual(['EIO: i/o error, fdatasync']);
      expect(dbSyncs).toBe(1);
      expect(passes).toEqual([]);
      expect(cp.running).toBe(false);
      expect(cp.pinned).toBe(true);
      // Every frame was copied, but the pin stops a writer from starting the WAL over: it appends.
      const before = walLog(db);
      for (let i = 0; i < 5; i++) insert.run();
      expect(walLog(db)).toBeGreaterThan(before);
      // Nor does a later write start the passes again, and stop() leaves the pin (and the WAL) in place.
      cp.wrote();
      expect(cp.running).toBe(false);
      await cp.stop();
      expect(cp.pinned).toBe(true);
      db.close();
    }, 30_000);

    it('a failed sync of the WAL (before any copy) is tried again by the next pass', async () => {
      const { db, path } = connection('failing-wal-sync.db');
      const insert = db.prepare('INSERT INTO t VALUES (randomblob(3000))');
      let walFailures = 0;
      const sync = async (fd: number) => {
        if (fileOf(fd) === 'wal' && walFailures < 2) {
          walFailures++;
          throw Object.assign(new Error('EIO'), { code: 'EIO' });
        }
      };
      const failures: Error[] = [];
      const cp = new Checkpointer(path, { everyMs: 20, idleMs: 60_000, sync, onSyncFailure: (e) => failures.push(e) });
      const passes = passesOf(cp);
      for (let i = 0; i < 10; i++) insert.run();
      cp.wrote();
      const warnings: string[] = [];
      const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
      process.on('warning', onWarning);
      await until('a pass that completes', () => passes.length > 0);
      process.off('warning', onWarning);
      expect(walFailures).toBe(2);
      expect(failures).toEqual([]);
      // The first failure is reported (a pass that keeps failing lets the WAL grow); the second, in a row, is not.
      expect(warnings).toEqual(['CheckpointWarning: SQLite checkpoint pass failed (1 in a row; the WAL keeps growing until one succeeds): EIO']);
      expect(passes[0]!.checkpointed).toBe(passes[0]!.log);
      await cp.stop();
      db.close();
    }, 30_000);

    it('a first read of the pin that fails leaves no pin behind: the next pass takes a real one', async () => {
      const { db, path } = connection('failing-pin.db');
      const insert = db.prepare('INSERT INTO t VALUES (randomblob(3000))');
      const cp = new Checkpointer(path, { everyMs: 30, idleMs: 60_000 });
      const passes = passesOf(cp);
      for (let i = 0; i < 10; i++) insert.run();
      cp.wrote();
      const h = (cp as unknown as { handles: { readMark: { get: () => unknown }; pin: Database.Database } }).handles;
      const get = h.readMark.get.bind(h.readMark);
      let thrown = 0;
      h.readMark.get = () => {
        if (thrown++ === 0) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
        return get();
      };
      await until('a pass that completes', () => passes.length > 0);
      expect(thrown).toBeGreaterThan(1);
      // The failed attempt left no transaction open that would have passed for a pin.
      expect(h.pin.inTransaction).toBe(false);
      await cp.stop();
      db.close();
    }, 30_000);

    it('stop() while a pass waits on the database file sync syncs it itself before letting go', async () => {
      const path = join(dir, 'stop-during-sync.db');
      let hang = false;
      let hung = 0;
      const sync = (fd: number) => {
        if (hang && fileOf(fd) === 'db') {
          hung++;
          return new Promise<void>(() => undefined); // never settles
        }
        return Promise.resolve();
      };
      const driver = openSqlite(path, { checkpoints: { everyMs: 20, idleMs: 60_000, sync } });
      await driver.exec('CREATE TABLE t (x BLOB)');
      hang = true;
      for (let i = 0; i < 10; i++) await driver.run('INSERT INTO t VALUES (randomblob(3000))');
      await until('a pass stuck on the sync', () => hung > 0);
      const t0 = Date.now();
      await driver.close();
      expect(Date.now() - t0).toBeLessThan(5_000);
      const reopened = new Database(path);
      expect(reopened.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(reopened.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 10 });
      reopened.close();
    }, 30_000);

    it('runs on the event loop and the threadpool: no thread is started for it', async () => {
      const threads = () => readdirSync('/proc/self/task').length;
      const { db, path, fileSize } = connection('threads.db');
      const insert = db.prepare('INSERT INTO t VALUES (randomblob(100000))');
      const cp = new Checkpointer(path, { everyMs: 20, idleMs: 60_000 });
      insert.run();
      await sleep(50);
      const before = threads();
      const size = fileSize();
      cp.wrote();
      await until('the rows in the database file', () => fileSize() > size + 50_000);
      // libuv's threadpool (the syncs) starts with the process's first use of it; the fs calls of
      // the test runner have already started it, so any new thread here would be the pass's own.
      expect(threads()).toBe(before);
      await cp.stop();
      db.close();
    }, 30_000);
  });
});
