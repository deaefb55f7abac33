import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';
import { PG_URL } from '../store/harness.js';
import { KEY_CACHE_TTL_MS } from '../../src/auth/authenticator.js';
import { hashKey } from '../../src/auth/keys.js';

/**
 * Two gateway instances sharing one PostgreSQL database and one Redis limiter, as in production:
 * a job created on one is seen, polled and settled exactly once by both; quotas are shared.
 */
const schema = `gw_multi_${randomBytes(4).toString('hex')}`;
let sim: SimServer;
let a: TestGateway;
let b: TestGateway;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 200 });
  const shared = {
    ...upstreamsFor([{ module: sora, sim }]),
    database: `${PG_URL}?schema=${schema}`,
    limits: { backend: 'redis', redis_url: 'redis://127.0.0.1:6379', defaults: { video: { rpm: 5 } } },
  };
  a = await startTestGateway(shared);
  b = await startTestGateway(shared);
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await sim?.close();
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
});

describe('several gateway instances on PostgreSQL and Redis', () => {
  it('a job created on one instance is polled on both and billed exactly once', async () => {
    const { key, account } = await a.newKey(10);
    const created = await call(a, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'two instances', seconds: 8 } });
    expect(created.status, created.text).toBe(200);
    await new Promise((r) => setTimeout(r, 400));
    // Both instances poll at once, several times: one wins the lease and settles, the others read.
    const polls = await Promise.all(Array.from({ length: 10 }, (_, i) => call(i % 2 ? a : b, 'GET', `/v1/videos/${created.json.id}`, { key })));
    for (const p of polls) expect(p.status).toBe(200);
    let final = polls.find((p) => p.json.status === 'completed')?.json;
    for (let i = 0; !final && i < 50; i++) {
      const p = await call(b, 'GET', `/v1/videos/${created.json.id}`, { key });
      if (p.json.status === 'completed') final = p.json;
      else await new Promise((r) => setTimeout(r, 50));
    }
    expect(final?.seconds).toBe(8);
    const accountId = (await a.services.store.getAccountByName(account))!.id;
    const ledger = await b.services.store.listLedger(accountId);
    expect(ledger.filter((e) => e.kind === 'capture')).toHaveLength(1);
    expect(ledger.filter((e) => e.kind === 'release')).toHaveLength(1);
    expect(await b.balance(account)).toBe(10_000_000 - 800_000);
    // Content through the other instance.
    const content = await fetch(`${b.url}/v1/videos/${created.json.id}/content`, { headers: { authorization: `Bearer ${key}` } });
    expect(content.status).toBe(200);
  });

  it('a key revoked on one instance stops working on the other within the 1 s key cache', async () => {
    const { key } = await a.newKey(10);
    expect((await call(b, 'GET', '/v1/models', { key })).status).toBe(200); // b now holds it in its cache
    const record = (await a.services.store.findKeyByHash(hashKey(key)))!;
    await a.services.admin.revokeKey(record.id);
    const revokedAt = Date.now();
    expect((await call(a, 'GET', '/v1/models', { key })).status).toBe(401); // at once where it was revoked
    // Any request b starts more than KEY_CACHE_TTL_MS after the revoke is refused.
    await new Promise((r) => setTimeout(r, KEY_CACHE_TTL_MS + 20 - (Date.now() - revokedAt)));
    const late = await call(b, 'GET', '/v1/models', { key });
    expect(late.status).toBe(401);
    expect(late.json.error.code).toBe('invalid_api_key');
  });

  it('shares the video rate limit across instances through Redis', async () => {
    const { key } = await a.newKey(100);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const gw = i % 2 ? b : a;
      statuses.push((await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: `n${i}` } })).status);
    }
    expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
    expect(statuses[5]).toBe(429);
  });
});
