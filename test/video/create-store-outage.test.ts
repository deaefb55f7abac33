import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call } from '../helpers/gateway.js';
import { oneVendorGateway } from '../helpers/video.js';

/**
 * A video create the database could not take (SQLite locked by another process past the busy
 * timeout: 503 store_unavailable) wrote nothing and asked no vendor: like a refusal, it gives its
 * video RPM admission back, so the client's retry is not refused as over the limit.
 */
// One gateway on the sora simulator for the file (test/helpers/video.ts).
const env = oneVendorGateway(sora);

describe('a video create the store could not take', () => {
  it('is 503 store_unavailable and gives its video RPM admission back', async () => {
    const { key } = await env.gw.newKey(100, { limits: { video: { rpm: 1 } } });
    const body = { model: 'sora-2', prompt: 'a fox', seconds: 4 };
    const other = new Database(join(env.gw.dataDir, 'gateway.db'));
    other.exec('BEGIN IMMEDIATE');
    try {
      const refused = await call(env.gw, 'POST', '/v1/videos/generations', { key, body });
      expect(refused.status, refused.text).toBe(503);
      expect(refused.json.error.code).toBe('store_unavailable');
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect(env.sim.received('POST', /./)).toHaveLength(0);
    const retried = await call(env.gw, 'POST', '/v1/videos/generations', { key, body });
    expect(retried.status, retried.text).toBe(200);
    // The one admission the quota allows is now taken.
    expect((await call(env.gw, 'POST', '/v1/videos/generations', { key, body })).status).toBe(429);
  }, 30_000);
});
