import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Another process holding the SQLite database's write lock (a `sqlite3` shell left in a write
 * transaction, a backup tool) past the busy timeout: the gateway's write was not applied, and the
 * client is told to retry (503 store_unavailable), not given a 500.
 */
let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({});
});
afterAll(async () => {
  await gw?.close();
});

describe('SQLite locked by another process', () => {
  it('a write past the busy timeout is 503 store_unavailable; once the lock is let go the same write succeeds', async () => {
    const admin = { authorization: `Bearer ${gw.adminToken}` };
    const other = new Database(join(gw.dataDir, 'gateway.db'));
    other.exec('BEGIN IMMEDIATE');
    try {
      const r = await call(gw, 'POST', '/admin/accounts', { headers: admin, body: { name: 'locked-out', balance: '1' } });
      expect(r.status, r.text).toBe(503);
      expect(r.json.error).toMatchObject({ type: 'server_error', code: 'store_unavailable' });
      expect(r.headers.get('retry-after')).toBeTruthy();
      expect(r.text).not.toMatch(/SQLITE|database is locked/i);
    } finally {
      other.exec('COMMIT');
      other.close();
    }
    const again = await call(gw, 'POST', '/admin/accounts', { headers: admin, body: { name: 'locked-out', balance: '1' } });
    expect(again.status, again.text).toBeLessThan(300);
  }, 20_000);
});
