import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { TcpRelay } from '../helpers/tcp-relay.js';
import { balanceOf, ledgerSum, PG_URL, postgresBackend } from '../store/harness.js';
import type { SqlStore } from '../../src/store/index.js';

/**
 * PostgreSQL cut off from a running gateway (its connections through a relay the test stops): every
 * request that needs the database is a 503 in the error shape that says so and can be retried, never
 * a 500; nothing is half-written (no job without its hold, no charge); once the database is back the
 * same requests succeed and the balance equals the ledger.
 */
const backend = postgresBackend();
const relay = new TcpRelay(5432);
let direct: SqlStore;
let gw: TestGateway;
let videoSim: SimServer;
let embedSim: SimServer;
let key: string;
let accountId: string;
let videoModel: string;
let jobId: string;
let schema: string;

beforeAll(async () => {
  const fresh = await backend.fresh();
  direct = fresh.store;
  schema = new URL(fresh.url).searchParams.get('schema')!;
  await relay.start();
  const url = new URL(fresh.url);
  url.hostname = '127.0.0.1';
  url.port = String(relay.port);
  videoSim = await sora.simulator.start({ taskMs: 60_000 });
  embedSim = await startOpenAISimulator();
  const d = sora.simulator.demo(videoSim);
  videoModel = d.models[0]!.name;
  gw = await startTestGateway({
    database: url.toString(),
    upstreams: [
      { ...d.options, name: 'sora-sim', vendor: 'sora', base_url: videoSim.url, api_key: d.apiKey, models: d.models.map((m) => m.name) },
      { name: 'oa', vendor: 'openai', base_url: embedSim.url, api_key: embedSim.settings.apiKey, models: ['text-embedding-3-small'] },
    ],
    models: {
      ...Object.fromEntries(d.models.map((m) => [m.name, { capabilities: ['video'], price: { per_second: 0.1 } }])),
      'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 1000 } },
    },
  });
  const made = await gw.newKey(100);
  key = made.key;
  accountId = (await direct.getAccountByName(made.account))!.id;
  const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: videoModel, prompt: 'before the outage', seconds: 4 } });
  expect(created.status, created.text).toBe(200);
  jobId = created.json.id;
}, 30_000);

afterAll(async () => {
  await relay.start().catch(() => undefined);
  await gw?.close();
  await relay.stop();
  await Promise.all([videoSim?.close(), embedSim?.close()]);
  await backend.dispose();
});

function expectStoreUnavailable(r: { status: number; json: any; text: string; headers: Headers }, what: string): void {
  expect(r.status, `${what}: ${r.text}`).toBe(503);
  expect(r.json?.error, what).toMatchObject({ type: 'server_error', code: 'store_unavailable' });
  expect(Number(r.headers.get('retry-after')), what).toBeGreaterThanOrEqual(1);
  expect(r.text, what).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|terminated/);
}

describe('PostgreSQL unreachable while the gateway serves', () => {
  it('answers 503 store_unavailable (not 500), writes nothing half, and serves again once the database is back', async () => {
    const before = await balanceOf(direct, accountId);
    const jobsBefore = (await direct.driver.query('SELECT COUNT(*) AS n FROM jobs'))[0]!.n;
    await relay.stop();
    try {
      // A video create holds money in a transaction: it must fail whole, with a retryable answer.
      expectStoreUnavailable(
        await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: videoModel, prompt: 'during the outage', seconds: 4 } }),
        'video create',
      );
      // A poll reads the job's row (not cached: the cache keeps rows for at most a second).
      await new Promise((r) => setTimeout(r, 1_100));
      expectStoreUnavailable(await call(gw, 'GET', `/v1/videos/${jobId}`, { key }), 'video poll');
      // The admin surface reads the store too.
      expectStoreUnavailable(
        await call(gw, 'GET', '/admin/accounts', { headers: { authorization: `Bearer ${gw.adminToken}` } }),
        'admin accounts',
      );
    } finally {
      await relay.start();
    }
    // Nothing of the refused create stuck: no job row, no hold.
    expect((await direct.driver.query('SELECT COUNT(*) AS n FROM jobs'))[0]!.n).toBe(jobsBefore);
    expect(await balanceOf(direct, accountId)).toBe(before);
    expect(await ledgerSum(direct, accountId)).toBe(before);

    // The pool reconnects: the same requests succeed.
    const again = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: videoModel, prompt: 'after the outage', seconds: 4 } });
    expect(again.status, again.text).toBe(200);
    expect((await call(gw, 'GET', `/v1/videos/${jobId}`, { key })).status).toBe(200);
    const after = await balanceOf(direct, accountId);
    expect(after).toBe(before - 400_000);
    expect(await ledgerSum(direct, accountId)).toBe(after);
  }, 30_000);

  it('a connection the server ends in the middle of a create: 503 store_unavailable, and neither the job nor its hold is left', async () => {
    const admin = new pg.Client({ connectionString: PG_URL });
    const blocker = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await blocker.connect();
    try {
      const before = await balanceOf(direct, accountId);
      const jobsBefore = (await direct.driver.query('SELECT COUNT(*) AS n FROM jobs'))[0]!.n;
      // Another session holds the account row: the create's transaction stops inside, after its job row.
      const blockerPid = (await blocker.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      await blocker.query('BEGIN');
      await blocker.query(`SELECT id FROM "${schema}".accounts WHERE id = $1 FOR UPDATE`, [accountId]);
      const pending = call(gw, 'POST', '/v1/videos/generations', { key, body: { model: videoModel, prompt: 'cut mid-transaction', seconds: 4 } });
      let waiter: number | undefined;
      for (let i = 0; i < 500 && waiter === undefined; i++) {
        const r = await admin.query('SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [blockerPid]);
        waiter = r.rows[0]?.pid as number | undefined;
        if (waiter === undefined) await new Promise((res) => setTimeout(res, 20));
      }
      expect(waiter, 'the create never waited on the account row').toBeDefined();
      await admin.query('SELECT pg_terminate_backend($1)', [waiter]);
      await blocker.query('ROLLBACK');
      expectStoreUnavailable(await pending, 'create cut mid-transaction');
      expect((await direct.driver.query('SELECT COUNT(*) AS n FROM jobs'))[0]!.n).toBe(jobsBefore);
      expect(await balanceOf(direct, accountId)).toBe(before);
      expect(await ledgerSum(direct, accountId)).toBe(before);
      // The pool replaced the dead connection.
      const again = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: videoModel, prompt: 'after the cut', seconds: 4 } });
      expect(again.status, again.text).toBe(200);
    } finally {
      await blocker.end();
      await admin.end();
    }
  }, 30_000);
});
