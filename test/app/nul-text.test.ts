import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { dropSchema, pgSchemaUrl } from '../store/harness.js';

/**
 * Text with a NUL character (U+0000) from a client. Found by the endpoint fuzzer on PostgreSQL,
 * whose text cannot hold it (SQLite's can): a lookup or a write with one failed the statement, and
 * the client got a 500 (`POST /admin/webhooks {"account":"\u0000"}`, `GET /admin/accounts/%00`).
 * Both backends now answer alike: lookups find nothing, and text is kept (on PostgreSQL with each
 * NUL stored as U+FFFD, the replacement character).
 */
const schema = `nul_text_${randomBytes(4).toString('hex')}`;
const backends: [string, () => Record<string, unknown>][] = [
  ['sqlite', () => ({})],
  ['postgres', () => ({ database: pgSchemaUrl(schema) })],
];

describe.each(backends)('on %s', (backend, config) => {
  let gw: TestGateway;
  const admin = (method: string, path: string, body?: unknown) => call(gw, method, path, { key: gw.adminToken, body });
  beforeAll(async () => {
    gw = await startTestGateway(config());
    await gw.createAccount('nul', { balance: 1 });
  });
  afterAll(async () => {
    await gw?.close();
    if (backend === 'postgres') await dropSchema(schema);
  });

  it.each([
    ['GET', '/admin/accounts/%00', 'account_not_found'],
    ['GET', '/admin/accounts/n%00ul/ledger', 'account_not_found'],
    ['GET', '/admin/keys?account=%00', 'account_not_found'],
    ['GET', '/admin/jobs/%00', 'video_not_found'],
  ])('%s %s finds nothing (404 %s)', async (method, path, code) => {
    const r = await admin(method, path);
    expect(r.status, r.text).toBe(404);
    expect(r.json.error.code).toBe(code);
  });

  it('a webhook for an account named with a NUL finds no account', async () => {
    const r = await admin('POST', '/admin/webhooks', { account: '\u0000', url: 'https://93.184.216.34/hook' });
    expect(r.status, r.text).toBe(404);
    expect(r.json.error.code).toBe('account_not_found');
  });

  it('a key name and a top-up note with a NUL are kept', async () => {
    const key = await admin('POST', '/admin/keys', { account: 'nul', name: 'a\u0000b' });
    expect(key.status, key.text).toBe(201);
    const stored = backend === 'postgres' ? 'a\uFFFDb' : 'a\u0000b';
    expect((await admin('GET', '/admin/keys?account=nul')).json.data.map((k: { name: string }) => k.name)).toContain(stored);
    const top = await admin('POST', '/admin/accounts/nul/topup', { amount: 1, note: 'n\u0000' });
    expect(top.status, top.text).toBe(200);
    expect((await admin('GET', '/admin/accounts/nul/ledger')).json.data[0].note).toBe(backend === 'postgres' ? 'n\uFFFD' : 'n\u0000');
  });

  it('a user route with a NUL in the id finds nothing', async () => {
    const { key } = await gw.newKey(1);
    for (const path of ['/v1/videos/%00', '/v1/files/%00']) {
      const r = await call(gw, 'GET', path, { key });
      expect(r.status, `${path} ${r.text}`).toBe(404);
    }
  });
});
