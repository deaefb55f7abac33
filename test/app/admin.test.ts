import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
const admin = () => ({ authorization: `Bearer ${gw.adminToken}` });

beforeAll(async () => {
  gw = await startTestGateway({});
});
afterAll(async () => gw?.close());

describe('admin API', () => {
  it('takes only the admin token, never a user key', async () => {
    const { key } = await gw.newKey();
    expect((await call(gw, 'GET', '/admin/accounts', {})).status).toBe(401);
    expect((await call(gw, 'GET', '/admin/accounts', { key })).status).toBe(401);
    expect((await call(gw, 'GET', '/admin/accounts', { headers: admin() })).status).toBe(200);
  });

  it('creates accounts and keys, tops up, lists the ledger, revokes', async () => {
    const a = await call(gw, 'POST', '/admin/accounts', { headers: admin(), body: { name: 'acme', balance: '12.5' } });
    expect(a.status).toBe(201);
    expect(a.json).toMatchObject({ name: 'acme', balance: '12.500000', balance_micros: 12_500_000 });
    const t = await call(gw, 'POST', '/admin/accounts/acme/topup', { headers: admin(), body: { amount: 2.5, note: 'invoice 7' } });
    expect(t.json.balance_micros).toBe(15_000_000);
    const k = await call(gw, 'POST', '/admin/keys', { headers: admin(), body: { account: 'acme', models: ['sora-*'], actions: ['video'], expires: '30d' } });
    expect(k.status).toBe(201);
    expect(k.json.key).toMatch(/^sk-gw-[A-Za-z0-9_-]{43}$/);
    const list = await call(gw, 'GET', '/admin/keys?account=acme', { headers: admin() });
    expect(list.json.data).toHaveLength(1);
    expect(JSON.stringify(list.json)).not.toContain(k.json.key);
    const ledger = await call(gw, 'GET', '/admin/accounts/acme/ledger', { headers: admin() });
    expect(ledger.json.data.map((e: { kind: string }) => e.kind).sort()).toEqual(['credit', 'credit']);
    const r = await call(gw, 'POST', `/admin/keys/${k.json.id}/revoke`, { headers: admin() });
    expect(r.json.revoked_at).not.toBeNull();
    expect((await call(gw, 'POST', `/admin/keys/${k.json.id}/revoke`, { headers: admin() })).status).toBe(400);
  });

  it('refuses a key lifetime no date can hold, and key management goes on working', async () => {
    await call(gw, 'POST', '/admin/accounts', { headers: admin(), body: { name: 'longlived' } });
    for (const expires of ['99999999999d', '100000000d', '36501d', '0d', '1234567890123456789s']) {
      const k = await call(gw, 'POST', '/admin/keys', { headers: admin(), body: { account: 'longlived', expires } });
      expect(k.status).toBe(400);
      expect(k.json.error).toMatchObject({ type: 'invalid_request_error', param: 'expires' });
    }
    const ok = await call(gw, 'POST', '/admin/keys', { headers: admin(), body: { account: 'longlived', expires: '36500d' } });
    expect(ok.status).toBe(201);
    const list = await call(gw, 'GET', '/admin/keys?account=longlived', { headers: admin() });
    expect(list.status).toBe(200);
    expect(list.json.data).toHaveLength(1);
    expect((await call(gw, 'POST', `/admin/keys/${ok.json.id}/revoke`, { headers: admin() })).status).toBe(200);
  });

  it('rejects unknown fields, bad amounts and duplicates without writing anything', async () => {
    const before = (await call(gw, 'GET', '/admin/accounts', { headers: admin() })).json.data.length;
    const u = await call(gw, 'POST', '/admin/accounts', { headers: admin(), body: { name: 'x1', balanse: 5 } });
    expect(u.status).toBe(400);
    expect(u.json.error).toMatchObject({ type: 'invalid_request_error', param: 'balanse' });
    expect((await call(gw, 'POST', '/admin/accounts', { headers: admin(), body: { name: 'x2', balance: -1 } })).status).toBe(400);
    expect((await call(gw, 'POST', '/admin/accounts', { headers: admin(), body: { name: 'bad name!' } })).status).toBe(400);
    await call(gw, 'POST', '/admin/accounts', { headers: admin(), body: { name: 'dup' } });
    expect((await call(gw, 'POST', '/admin/accounts', { headers: admin(), body: { name: 'dup' } })).status).toBe(400);
    expect((await call(gw, 'POST', '/admin/accounts/dup/topup', { headers: admin(), body: { amount: 'lots' } })).status).toBe(400);
    expect((await call(gw, 'POST', '/admin/keys', { headers: admin(), body: { account: 'dup', actions: ['fly'] } })).status).toBe(400);
    expect((await call(gw, 'GET', '/admin/accounts/ghost', { headers: admin() })).status).toBe(404);
    const after = (await call(gw, 'GET', '/admin/accounts', { headers: admin() })).json.data.length;
    expect(after).toBe(before + 1);
  });
});
