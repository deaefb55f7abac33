import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../src/core/errors.js';
import { openPostgres } from '../../src/store/pg-driver.js';
import type { SqlDriver } from '../../src/store/driver.js';
import { TcpRelay } from '../helpers/tcp-relay.js';
import { PG_URL } from './harness.js';

/**
 * A statement inside a transaction that gets no answer (the database stalls with the connection
 * open) fails after one query timeout: the connection is dropped rather than rolled back over. A
 * ROLLBACK sent on it would queue behind the stalled statement and wait out a second timeout.
 */
const relay = new TcpRelay(5432);
let driver: SqlDriver;

beforeAll(async () => {
  await relay.start();
  const url = new URL(PG_URL);
  url.hostname = '127.0.0.1';
  url.port = String(relay.port);
  driver = await openPostgres({ connectionString: url.toString(), queryTimeoutMs: 1_000, connectTimeoutMs: 2_000 });
});
afterAll(async () => {
  relay.resume();
  await driver?.close();
  await relay.stop();
});

describe('PostgreSQL stalls in the middle of a transaction', () => {
  it('fails as StoreUnavailableError after one query timeout, and the next transaction runs on a fresh connection', async () => {
    const started = Date.now();
    const err = await driver
      .transaction(async (tx) => {
        await tx.query('SELECT 1 AS one');
        relay.stall();
        await tx.query('SELECT 2 AS two');
      })
      .catch((e: unknown) => e);
    const waited = Date.now() - started;
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(waited).toBeGreaterThanOrEqual(950);
    expect(waited).toBeLessThan(1_700);
    relay.resume();
    const rows = await driver.transaction(async (tx) => tx.query('SELECT 3 AS three'));
    expect(Number(rows[0]!.three)).toBe(3);
  }, 20_000);
});
