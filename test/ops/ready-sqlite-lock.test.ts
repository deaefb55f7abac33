import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Another process holding the SQLite database's write lock (an operator's `BEGIN IMMEDIATE` in the
 * sqlite3 shell) fails every write with 503 while reads still answer: readiness reports it, so a
 * load balancer stops sending traffic, and turns back once the lock is let go.
 */
let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({});
});
afterAll(async () => {
  await gw?.close();
});

describe('/ready on SQLite while another process holds the write lock', () => {
  it('is 503 with the store check failing while the lock is held, 200 once it is let go', async () => {
    expect((await call(gw, 'GET', '/ready')).status).toBe(200);
    const other = new Database(join(gw.dataDir, 'gateway.db'));
    other.exec('BEGIN IMMEDIATE');
    try {
      const started = Date.now();
      const r = await call(gw, 'GET', '/ready');
      expect(r.status, r.text).toBe(503);
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(r.json.status).toBe('not_ready');
      expect(r.json.checks.store).toMatchObject({ status: 'failing', reason: 'write lock held by another process' });
      // Reads still answer: the migrations are there, only writes are blocked.
      expect(r.json.checks.migrations.status).toBe('ok');
      expect(r.text).not.toMatch(/SQLITE|database is locked/i);
      // Answered within the check's limit, not after the writes' 5 s busy timeout.
      expect(Date.now() - started).toBeLessThan(1_000);
      // The probe does not hold the event loop: liveness answers meanwhile.
      expect((await call(gw, 'GET', '/health')).status).toBe(200);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    const after = await call(gw, 'GET', '/ready');
    expect(after.status, after.text).toBe(200);
    expect(after.json.checks.store.status).toBe('ok');
  }, 20_000);

  it("does not hold this process's reads while it waits for the lock", async () => {
    const other = new Database(join(gw.dataDir, 'gateway.db'));
    other.exec('BEGIN IMMEDIATE');
    try {
      const probing = call(gw, 'GET', '/ready');
      await new Promise((r) => setTimeout(r, 20));
      // A read meanwhile answers between the probe's tries, not after the probe gives up.
      const started = Date.now();
      await gw.services.store.getAccountByName('nobody');
      const readMs = Date.now() - started;
      const ready = await probing;
      expect(ready.status).toBe(503);
      expect(readMs).toBeLessThan(120);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
  }, 20_000);
});
