import { describe, expect, it } from 'vitest';
import type { SqlStore } from '../../src/store/sql-store.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call } from '../helpers/gateway.js';
import { oneVendorGateway } from '../helpers/video.js';

/**
 * SQLite out of room (a full disk: SQLITE_FULL, made real here by `PRAGMA max_page_count`, which
 * fails every write that needs one more page of the file): the gateway's write was not applied,
 * so the client is told to retry (503 store_unavailable, nothing held, the video admission given
 * back), and `/ready` fails so the load balancer stops sending traffic, until a write succeeds again.
 */
// One gateway on the sora simulator for the file (test/helpers/video.ts).
const env = oneVendorGateway(sora);

const body = { model: 'sora-2', prompt: 'a fox in the snow', seconds: 4 };

describe('SQLite with no room left', () => {
  it('a video create is 503 store_unavailable with nothing held, /ready is 503 while it lasts, and both recover once there is room', async () => {
    const driver = (env.gw.services.store as SqlStore).driver;
    const filler = await env.gw.newKey(1_000);
    const { key, account } = await env.gw.newKey(100, { limits: { video: { rpm: 1 } } });
    const before = await env.gw.balance(account);
    expect((await call(env.gw, 'GET', '/ready')).status).toBe(200);

    // No page beyond the file's present size: creates succeed while the pages they write to have
    // room, and the first one that needs another page fails (a few jobs fill the jobs table's page).
    // Filled until a job row itself no longer fits: a create whose row fitted but whose recorded
    // vendor answer did not has reached the vendor (and failed after it, also with 503).
    await driver.exec('PRAGMA max_page_count = 1');
    let full: Awaited<ReturnType<typeof call>> | undefined;
    for (let i = 0; i < 100 && !full; i++) {
      const sent = env.sim.received('POST', /./).length;
      const r = await call(env.gw, 'POST', '/v1/videos/generations', { key: filler.key, body });
      if (r.status !== 200 && env.sim.received('POST', /./).length === sent) full = r;
    }
    expect(full, 'no create ran out of room').toBeDefined();
    expect(full!.status, full!.text).toBe(503);
    expect(full!.json.error).toMatchObject({ type: 'server_error', code: 'store_unavailable' });

    const asked = env.sim.received('POST', /./).length;
    const refused = await call(env.gw, 'POST', '/v1/videos/generations', { key, body });
    expect(refused.status, refused.text).toBe(503);
    expect(refused.json.error).toMatchObject({ type: 'server_error', code: 'store_unavailable' });
    expect(refused.headers.get('retry-after')).toBeTruthy();
    expect(refused.text).not.toMatch(/SQLITE|full/i);
    // Nothing held, no job, no vendor asked.
    expect(await env.gw.balance(account)).toBe(before);
    const jobs = await driver.query('SELECT COUNT(*) AS n FROM jobs WHERE account_id = (SELECT id FROM accounts WHERE name = ?)', [account]);
    expect(Number(jobs[0]!.n)).toBe(0);
    expect(env.sim.received('POST', /./)).toHaveLength(asked);

    const notReady = await call(env.gw, 'GET', '/ready');
    expect(notReady.status, notReady.text).toBe(503);
    expect(notReady.json.checks.store).toMatchObject({ status: 'failing', reason: 'writes failing (disk full or I/O error)' });

    // Room again: the next write succeeds (the admission of the refused create was given back), and /ready follows.
    await driver.exec('PRAGMA max_page_count = 1073741823');
    const retried = await call(env.gw, 'POST', '/v1/videos/generations', { key, body });
    expect(retried.status, retried.text).toBe(200);
    const ready = await call(env.gw, 'GET', '/ready');
    expect(ready.status, ready.text).toBe(200);
  }, 30_000);
});
