import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../src/core/errors.js';
import { toGatewayError } from '../../src/http/render.js';
import { openPostgres } from '../../src/store/pg-driver.js';
import type { SqlDriver } from '../../src/store/driver.js';
import { PG_URL } from './harness.js';

/**
 * Two transactions that lock the same rows in opposite orders: PostgreSQL ends one of them as a
 * deadlock (SQLSTATE 40P01) and lets the other commit. The one ended must reach its caller as the
 * store's outage (503 store_unavailable, which the charge queue retries), not an unknown error (a
 * 500); its connection is sound, rolled back and used again.
 */
const table = `deadlock_${randomBytes(4).toString('hex')}`;
let driver: SqlDriver;

beforeAll(async () => {
  driver = await openPostgres({ connectionString: PG_URL, queryTimeoutMs: 10_000, connectTimeoutMs: 2_000 });
  await driver.exec(`CREATE TABLE ${table} (id int PRIMARY KEY, n int NOT NULL); INSERT INTO ${table} VALUES (1, 0), (2, 0)`);
});
afterAll(async () => {
  await driver?.exec(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
  await driver?.close();
});

describe('a PostgreSQL deadlock', () => {
  it('fails one transaction as StoreUnavailableError (503 store_unavailable); the other commits', async () => {
    let firstHolds!: () => void;
    const firstHeld = new Promise<void>((r) => (firstHolds = r));
    let secondHolds!: () => void;
    const secondHeld = new Promise<void>((r) => (secondHolds = r));
    const lockInOrder = (a: number, b: number, held: () => void, other: Promise<void>) =>
      driver.transaction(async (tx) => {
        await tx.run(`UPDATE ${table} SET n = n + 1 WHERE id = ?`, [a]);
        held();
        await other;
        await tx.run(`UPDATE ${table} SET n = n + 1 WHERE id = ?`, [b]);
        return 'committed';
      });
    const outcomes = await Promise.allSettled([lockInOrder(1, 2, firstHolds, secondHeld), lockInOrder(2, 1, secondHolds, firstHeld)]);
    const failed = outcomes.filter((o) => o.status === 'rejected') as PromiseRejectedResult[];
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    expect(failed).toHaveLength(1);
    expect(failed[0]!.reason).toBeInstanceOf(StoreUnavailableError);
    expect(((failed[0]!.reason as Error).cause as { code?: string }).code).toBe('40P01');
    expect(toGatewayError(failed[0]!.reason, 1_000_000)).toMatchObject({ status: 503, code: 'store_unavailable' });
    // The winner's two increments only: the victim's first one was rolled back.
    const rows = await driver.query(`SELECT sum(n) AS total FROM ${table}`);
    expect(Number(rows[0]!.total)).toBe(2);
    // The pool goes on.
    expect(Number((await driver.transaction((tx) => tx.query('SELECT 7 AS seven')))[0]!.seven)).toBe(7);
  }, 20_000);

  it("a read-only server and a statement timeout are the store's outage too, not a 500", async () => {
    const readOnly = await driver
      .transaction(async (tx) => {
        await tx.exec('SET TRANSACTION READ ONLY');
        await tx.run(`UPDATE ${table} SET n = n + 1 WHERE id = 1`);
      })
      .catch((e: unknown) => e);
    expect(readOnly).toBeInstanceOf(StoreUnavailableError);
    expect(((readOnly as Error).cause as { code?: string }).code).toBe('25006');
    const timedOut = await driver
      .transaction(async (tx) => {
        await tx.exec("SET LOCAL statement_timeout = '20ms'");
        await tx.query('SELECT pg_sleep(1)');
      })
      .catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(StoreUnavailableError);
    expect(toGatewayError(timedOut, 1_000_000)).toMatchObject({ status: 503, code: 'store_unavailable' });
    expect(Number((await driver.transaction((tx) => tx.query('SELECT 8 AS eight')))[0]!.eight)).toBe(8);
  });
});
