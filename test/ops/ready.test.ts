import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlStore } from '../../src/store/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { TcpRelay } from '../helpers/tcp-relay.js';
import { ensureRedis } from '../limits/redis-helper.js';
import { PG_URL } from '../store/harness.js';

/** Polls /ready until it answers `status` (bounded), returning the last answer. */
async function readyBecomes(gw: TestGateway, status: number, maxMs = 15_000) {
  const until = Date.now() + maxMs;
  for (;;) {
    const r = await call(gw, 'GET', '/ready');
    if (r.status === status || Date.now() > until) return r;
    await new Promise((res) => setTimeout(res, 100));
  }
}

describe('/ready on PostgreSQL and Redis, each behind a relay the test cuts', () => {
  const schema = `ready_${randomBytes(5).toString('hex')}`;
  const pgRelay = new TcpRelay(Number(new URL(PG_URL).port || 5432));
  const redisRelay = new TcpRelay(6379);
  let gw: TestGateway;

  beforeAll(async () => {
    await ensureRedis();
    await pgRelay.start();
    await redisRelay.start();
    const url = new URL(PG_URL);
    url.port = String(pgRelay.port);
    url.searchParams.set('schema', schema);
    gw = await startTestGateway({ database: url.toString(), limits: { backend: 'redis', redis_url: `redis://127.0.0.1:${redisRelay.port}` } });
  });
  afterAll(async () => {
    await gw?.close();
    await pgRelay.stop();
    await redisRelay.stop();
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  });

  it('is 200 naming every check while the store, migrations and Redis answer', async () => {
    const r = await readyBecomes(gw, 200);
    expect(r.status, r.text).toBe(200);
    expect(r.json.status).toBe('ready');
    expect(Object.keys(r.json.checks).sort()).toEqual(['migrations', 'redis', 'shutdown', 'store']);
    for (const c of Object.values<any>(r.json.checks)) expect(c.status).toBe('ok');
    expect(r.headers.get('x-request-id')).toBeTruthy();
  });

  it('turns 503 when PostgreSQL goes away, and back to 200 when it returns; /health never moves', async () => {
    await pgRelay.stop();
    const down = await call(gw, 'GET', '/ready');
    expect(down.status).toBe(503);
    expect(down.json.status).toBe('not_ready');
    expect(down.json.checks.store).toMatchObject({ status: 'failing', reason: expect.any(String) });
    expect(down.json.checks.migrations.status).toBe('failing');
    expect(down.json.checks.redis.status).toBe('ok');
    // Nothing of the driver's message (host, port, user) leaks into the probe's body.
    expect(down.text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|postgres/);
    expect((await call(gw, 'GET', '/health')).status).toBe(200);

    await pgRelay.start();
    const up = await readyBecomes(gw, 200);
    expect(up.status, up.text).toBe(200);
    expect(up.json.checks.store.status).toBe('ok');
  });

  it('turns 503 when Redis goes away, and back to 200 when it returns', async () => {
    await redisRelay.stop();
    const down = await readyBecomes(gw, 503, 5_000);
    expect(down.status).toBe(503);
    expect(down.json.checks.redis.status).toBe('failing');
    expect(down.json.checks.store.status).toBe('ok');

    await redisRelay.start();
    const up = await readyBecomes(gw, 200);
    expect(up.status, up.text).toBe(200);
    expect(up.json.checks.redis.status).toBe('ok');
  });
});

describe('/ready on SQLite', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({});
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('has no redis check when the limiter is in memory', async () => {
    const r = await call(gw, 'GET', '/ready');
    expect(r.status).toBe(200);
    expect(Object.keys(r.json.checks).sort()).toEqual(['migrations', 'shutdown', 'store']);
  });

  it('is 503 while a migration this build knows is not applied', async () => {
    const driver = (gw.services.store as SqlStore).driver;
    const [row] = await driver.query('SELECT version, name, applied_at FROM schema_migrations WHERE version = 1');
    await driver.run('DELETE FROM schema_migrations WHERE version = 1');
    try {
      const r = await call(gw, 'GET', '/ready');
      expect(r.status).toBe(503);
      expect(r.json.checks.store.status).toBe('ok');
      expect(r.json.checks.migrations).toMatchObject({ status: 'failing', reason: 'missing migration 1' });
    } finally {
      await driver.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [1, String(row!.name), Number(row!.applied_at)]);
    }
    expect((await call(gw, 'GET', '/ready')).status).toBe(200);
  });

  it('turns 503 at once when shutdown begins, while /health still answers', async () => {
    gw.services.shutdown.begin();
    const r = await call(gw, 'GET', '/ready');
    expect(r.status).toBe(503);
    expect(r.json.checks.shutdown).toMatchObject({ status: 'failing', reason: 'shutting down' });
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect((await call(gw, 'GET', '/health')).status).toBe(200);
  });
});
