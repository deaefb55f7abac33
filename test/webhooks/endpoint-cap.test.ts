import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { PG_URL } from '../store/harness.js';

/**
 * An account has at most 10 active webhook endpoints, however many registrations arrive at once:
 * the count and the insert are one atomic step in the store. Two instances sharing PostgreSQL are
 * where a count read before the insert let concurrent POSTs through (14 of 30); both stores' own
 * atomicity is in the store contract (test/store/cases-webhooks.ts).
 */
const webhooks = { allow_private_networks: true };
const admin = (gw: TestGateway) => ({ authorization: `Bearer ${gw.adminToken}` });

async function registerAtOnce(gateways: TestGateway[], account: string, n: number) {
  return Promise.all(
    Array.from({ length: n }, (_, i) => {
      const gw = gateways[i % gateways.length]!;
      return call(gw, 'POST', '/admin/webhooks', { headers: admin(gw), body: { account, url: `http://127.0.0.1:9/hook-${i}` } });
    }),
  );
}

function expectCapHeld(results: Awaited<ReturnType<typeof registerAtOnce>>) {
  const created = results.filter((r) => r.status === 201);
  const refused = results.filter((r) => r.status !== 201);
  expect(created).toHaveLength(10);
  expect(refused).toHaveLength(results.length - 10);
  for (const r of refused) {
    expect(r.status, r.text).toBe(400);
    expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'too_many_endpoints', param: 'url' });
  }
}

describe('webhook endpoint cap under concurrent registrations', () => {
  describe('two instances on PostgreSQL', () => {
    const schema = `gw_hook_cap_${randomBytes(4).toString('hex')}`;
    let a: TestGateway;
    let b: TestGateway;
    beforeAll(async () => {
      const shared = { database: `${PG_URL}?schema=${schema}`, webhooks };
      a = await startTestGateway(shared);
      b = await startTestGateway(shared);
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    });

    it('30 registrations split across both: exactly 10 are created, 20 refused', async () => {
      const { account } = await a.newKey(1);
      expectCapHeld(await registerAtOnce([a, b], account, 30));
      const listed = await call(b, 'GET', `/admin/webhooks?account=${account}`, { headers: admin(b) });
      expect(listed.json.data).toHaveLength(10);
    });
  });
});
