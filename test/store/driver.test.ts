import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { toDollarParams } from '../../src/store/driver.js';
import { MIGRATIONS, openDriver, openStore } from '../../src/store/index.js';
import { Mutex } from '../../src/store/mutex.js';
import { int } from '../../src/store/rows.js';
import { openSqlite } from '../../src/store/sqlite-driver.js';
import { PG_URL } from './harness.js';

const dir = mkdtempSync(join(tmpdir(), 'store-driver-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('toDollarParams', () => {
  it('numbers placeholders and leaves quoted text and comments alone', () => {
    expect(toDollarParams('SELECT * FROM t WHERE a = ? AND b IN (?, ?)')).toBe('SELECT * FROM t WHERE a = $1 AND b IN ($2, $3)');
    expect(toDollarParams(`SELECT '?', 'it''s ?', "we?ird" FROM t WHERE x = ?`)).toBe(`SELECT '?', 'it''s ?', "we?ird" FROM t WHERE x = $1`);
    expect(toDollarParams('SELECT ? -- why?\n, ? /* what? */ , ?')).toBe('SELECT $1 -- why?\n, $2 /* what? */ , $3');
  });
});

describe('Mutex', () => {
  it('runs uncontended work synchronously and queues the rest in order', async () => {
    const m = new Mutex();
    let ran = false;
    const p = m.runSync(() => (ran = true));
    expect(ran).toBe(true);
    await p;

    const release = await m.acquire();
    const order: number[] = [];
    const waiting = [1, 2, 3].map((n) => m.runSync(() => order.push(n)));
    await sleep(5);
    expect(order).toEqual([]);
    release();
    await Promise.all(waiting);
    expect(order).toEqual([1, 2, 3]);
    expect(m.locked).toBe(false);
  });
});

describe('SQLite driver', () => {
  it('keeps statements issued outside a transaction out of it', async () => {
    const db = openSqlite(':memory:');
    await db.exec('CREATE TABLE t (v INTEGER NOT NULL)');
    const failing = db.transaction(async (tx) => {
      await tx.run('INSERT INTO t (v) VALUES (?)', [1]);
      await sleep(20);
      throw new Error('abort');
    });
    await sleep(5);
    // Issued while the transaction is open: must neither see its row nor be rolled back with it.
    const outsideWrite = db.run('INSERT INTO t (v) VALUES (?)', [2]);
    const outsideRead = db.query('SELECT v FROM t ORDER BY v');
    await expect(failing).rejects.toThrow('abort');
    expect(await outsideWrite).toBe(1);
    expect((await outsideRead).map((r) => int(r.v))).toEqual([2]);
    expect((await db.query('SELECT v FROM t')).map((r) => int(r.v))).toEqual([2]);
    await db.close();
  });

  it('serialises two connections to one file inside a process', async () => {
    const file = join(dir, 'shared', 'two.db');
    const a = openSqlite(file, { busyTimeoutMs: 20 });
    const b = openSqlite(file, { busyTimeoutMs: 20 });
    expect(existsSync(file)).toBe(true);
    await a.exec('CREATE TABLE t (v INTEGER NOT NULL)');
    // Without a shared lock, b's BEGIN IMMEDIATE would give up with SQLITE_BUSY long before a commits.
    const slow = a.transaction(async (tx) => {
      await tx.run('INSERT INTO t (v) VALUES (1)');
      await sleep(100);
    });
    const quick = b.transaction(async (tx) => tx.run('INSERT INTO t (v) VALUES (2)'));
    await Promise.all([slow, quick]);
    expect((await b.query('SELECT count(*) AS n FROM t')).map((r) => int(r.n))).toEqual([2]);
    await a.close();
    await b.close();
  });
});

describe('PostgreSQL driver', () => {
  it('translates placeholders and rolls a failed transaction back', async () => {
    const db = await openDriver(`${PG_URL}?schema=driver_test_${process.pid}`, { dataDir: dir });
    try {
      const rows = await db.query(`SELECT '?' AS q, ?::int AS v, ?::text AS w`, [7, 'x?']);
      expect(rows).toEqual([{ q: '?', v: 7, w: 'x?' }]);
      await db.exec('CREATE TABLE IF NOT EXISTS t (v INTEGER NOT NULL)');
      await expect(
        db.transaction(async (tx) => {
          await tx.run('INSERT INTO t (v) VALUES (?)', [1]);
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect(await db.query('SELECT v FROM t')).toEqual([]);
    } finally {
      await db.exec(`DROP SCHEMA driver_test_${process.pid} CASCADE`).catch(() => {});
      await db.close();
    }
  });
});

describe('openStore', () => {
  it('migrates once when several instances open a new PostgreSQL schema together', async () => {
    for (let round = 0; round < 3; round++) {
      const schema = `race_test_${process.pid}_${round}`;
      const stores = await Promise.all([1, 2, 3, 4].map(() => openStore(`${PG_URL}?schema=${schema}`, { dataDir: dir })));
      try {
        const rows = await stores[0].driver.query('SELECT version FROM schema_migrations');
        expect(rows.map((r) => int(r.version))).toEqual(MIGRATIONS.map((m) => m.version));
      } finally {
        await stores[0].driver.exec(`DROP SCHEMA ${schema} CASCADE`);
        for (const s of stores) await s.close();
      }
    }
  });

  it('migrates once when several stores open a new SQLite file together', async () => {
    const url = `sqlite:${join(dir, 'race', 'gw.db')}`;
    const stores = await Promise.all([1, 2, 3].map(() => openStore(url, { dataDir: dir })));
    const rows = await stores[2].driver.query('SELECT version FROM schema_migrations');
    expect(rows.map((r) => int(r.version))).toEqual(MIGRATIONS.map((m) => m.version));
    for (const s of stores) await s.close();
  });
});

describe('openDriver', () => {
  it('puts bare sqlite: under dataDir and rejects unknown schemes without echoing the URL', async () => {
    const db = await openDriver('sqlite:', { dataDir: join(dir, 'data') });
    expect(existsSync(join(dir, 'data', 'gateway.db'))).toBe(true);
    await db.close();
    const err = await openDriver('mysql://root:hunter2@db/x', { dataDir: dir }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain('mysql:');
    expect((err as Error).message).not.toContain('hunter2');
    await expect(openDriver(`${PG_URL}?schema=bad;name`, { dataDir: dir })).rejects.toThrow(/schema name/);
  });
});

describe('int', () => {
  it('accepts exact integers from either driver and refuses anything past 2^53', () => {
    expect(int(5n)).toBe(5);
    expect(int('-42')).toBe(-42);
    expect(() => int(2n ** 53n + 1n)).toThrow(/out of range/);
    expect(() => int('9007199254740993')).toThrow(/out of range/);
    expect(() => int('1.5')).toThrow(/out of range/);
  });
});
