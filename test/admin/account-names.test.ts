import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * An account name is a path segment of the admin API (/admin/accounts/{name}/...). Found by the
 * endpoint fuzzer: '.' and '..' were accepted, and every URL client (fetch, curl, the console, the
 * CLI) resolves them as dot segments, so such an account could never be read, topped up or changed:
 * /admin/accounts/../ledger is /admin/ledger, and /admin/accounts/./topup is /admin/accounts/topup.
 */
let gw: TestGateway;
const admin = (method: string, path: string, body?: unknown) => call(gw, method, path, { key: gw.adminToken, body });

beforeAll(async () => {
  gw = await startTestGateway({});
});
afterAll(async () => gw?.close());

describe('account names', () => {
  it.each(['.', '..'])('%j is refused: no URL can name it', async (name) => {
    const r = await admin('POST', '/admin/accounts', { name, balance: 1 });
    expect(r.status, r.text).toBe(400);
    expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_parameter', param: 'name' });
    expect((await admin('GET', '/admin/accounts')).json.data.map((a: { name: string }) => a.name)).not.toContain(name);
  });

  it.each(['...', '.hidden', 'a..b', 'x.'])('%j is taken, and a URL client reaches it', async (name) => {
    const r = await admin('POST', '/admin/accounts', { name, balance: 1 });
    expect(r.status, r.text).toBe(201);
    const top = await admin('POST', `/admin/accounts/${encodeURIComponent(name)}/topup`, { amount: 2 });
    expect(top.status, top.text).toBe(200);
    expect(top.json).toMatchObject({ name, balance: '3.000000' });
    expect((await admin('GET', `/admin/accounts/${encodeURIComponent(name)}/ledger`)).json.data).toHaveLength(2);
  });
});
