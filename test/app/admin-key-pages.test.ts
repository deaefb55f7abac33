import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * GET /admin/keys answers in cursor pages (`limit`, `after`, `order`; `has_more`, `first_id`,
 * `last_id`, as GET /v1/videos), where it answered every key at once; and a key named by a display
 * prefix that several keys share is a 400 that says to use the id.
 */
let gw: TestGateway;
const admin = (method: string, path: string, body?: unknown) => call(gw, method, path, { headers: { authorization: `Bearer ${gw.adminToken}` }, body });
const T0 = 1_700_000_000_000;
/** Ids of the keys of account `pages-a`, then `pages-b`, each in (created_at, id) order. */
const ids: Record<'pages-a' | 'pages-b', string[]> = { 'pages-a': [], 'pages-b': [] };

interface Page {
  object: string;
  data: Array<{ id: string; account_id: string; revoked_at: string | null }>;
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** Every page of `query` with `limit` (from just past key `after`), following `last_id` while `has_more`. */
async function walk(query: string, limit: number, after = ''): Promise<{ pages: Page[]; ids: string[] }> {
  const pages: Page[] = [];
  for (let i = 0; i < 1000; i++) {
    const r = await admin('GET', `/admin/keys?limit=${limit}${query}${after ? `&after=${after}` : ''}`);
    expect(r.status, r.text).toBe(200);
    const page = r.json as Page;
    pages.push(page);
    expect(page.data.length).toBeLessThanOrEqual(limit);
    expect(page.first_id).toBe(page.data[0]?.id ?? null);
    expect(page.last_id).toBe(page.data.at(-1)?.id ?? null);
    if (!page.has_more) break;
    after = page.last_id!;
  }
  return { pages, ids: pages.flatMap((p) => p.data.map((k) => k.id)) };
}

beforeAll(async () => {
  gw = await startTestGateway({});
  for (const [name, count] of [['pages-a', 130], ['pages-b', 9]] as const) {
    const accountId = await gw.createAccount(name);
    for (let i = 0; i < count; i++) {
      // Three keys to each creation time, so that the id orders keys created in the same millisecond.
      const k = await gw.services.store.createKey({
        id: randomUUID(), accountId, hash: randomUUID(), prefix: name === 'pages-b' && i < 2 ? 'sk-gw-Shared' : `sk-gw-${randomUUID().slice(0, 6)}`,
        name: null, models: ['*'], actions: ['video'], limits: {}, expiresAt: null, createdAt: T0 + Math.floor(i / 3), budget: null,
      });
      ids[name].push(k.id);
    }
  }
  const byTime = async (name: 'pages-a' | 'pages-b') => {
    const recs = await Promise.all(ids[name].map((id) => gw.services.store.getKey(id)));
    ids[name] = recs.sort((x, y) => x!.createdAt - y!.createdAt || (x!.id < y!.id ? -1 : 1)).map((k) => k!.id);
  };
  await byTime('pages-a');
  await byTime('pages-b');
});
afterAll(async () => gw?.close());

describe('GET /admin/keys pages', () => {
  it('answers 100 keys by default in the list shape, oldest first, and says there are more', async () => {
    const r = await admin('GET', '/admin/keys?account=pages-a');
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ object: 'list', has_more: true, first_id: ids['pages-a'][0], last_id: ids['pages-a'][99] });
    expect(r.json.data.map((k: { id: string }) => k.id)).toEqual(ids['pages-a'].slice(0, 100));
  });

  it('walks every key once, in order, whatever the page size, either way', async () => {
    for (const limit of [1, 7, 30, 130, 1000]) {
      const asc = await walk('&account=pages-a', limit);
      expect(asc.ids).toEqual(ids['pages-a']);
      expect(asc.pages.at(-1)!.has_more).toBe(false);
      expect((await walk('&account=pages-a&order=desc', limit)).ids).toEqual([...ids['pages-a']].reverse());
    }
    // Without an account, every account's keys, both accounts' all there, in one (created_at, id) order.
    const all = (await walk('', 16)).ids;
    expect(new Set(all).size).toBe(all.length);
    expect(all.filter((id) => ids['pages-a'].includes(id))).toEqual(ids['pages-a']);
    expect(all.filter((id) => ids['pages-b'].includes(id))).toEqual(ids['pages-b']);
  });

  it('a key created while paging neither shifts nor repeats a page', async () => {
    const first = (await admin('GET', '/admin/keys?account=pages-b&limit=4')).json as Page;
    const made = await admin('POST', '/admin/keys', { account: 'pages-b' });
    expect(made.status).toBe(201);
    const rest = await walk('&account=pages-b', 4, first.last_id!);
    expect([...first.data.map((k) => k.id), ...rest.ids]).toEqual([...ids['pages-b'], made.json.id]);
    expect((await admin('POST', `/admin/keys/${made.json.id}/revoke`)).status).toBe(200);
  });

  it.each([
    ['limit=0', 'limit', 'invalid_parameter'],
    ['limit=1001', 'limit', 'invalid_parameter'],
    ['limit=-5', 'limit', 'invalid_parameter'],
    ['limit=2.5', 'limit', 'invalid_parameter'],
    ['limit=ten', 'limit', 'invalid_parameter'],
    ['limit=', 'limit', 'invalid_parameter'],
    ['order=newest', 'order', 'invalid_parameter'],
    ['after=no-such-key', 'after', 'invalid_cursor'],
  ])('?%s is a 400 naming %s', async (query, param, code) => {
    const r = await admin('GET', `/admin/keys?account=pages-a&${query}`);
    expect(r.status, r.text).toBe(400);
    expect(r.json).toEqual({ error: { type: 'invalid_request_error', message: expect.any(String), code, param } });
  });

  it("a cursor of another account's key is refused for this account's list", async () => {
    const r = await admin('GET', `/admin/keys?account=pages-a&after=${ids['pages-b'][0]}`);
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'invalid_cursor', param: 'after' });
    expect((await admin('GET', `/admin/keys?after=${ids['pages-b'][0]}&limit=1`)).status).toBe(200);
  });
});

describe('a key named by its display prefix', () => {
  it('that two keys share is a 400 asking for the id, for a revoke, a budget and a usage report alike', async () => {
    for (const [method, path] of [['POST', '/admin/keys/sk-gw-Shared/revoke'], ['GET', '/admin/usage?key=sk-gw-Shared']]) {
      const r = await admin(method, path);
      expect(r.status, r.text).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'ambiguous_key', param: 'key' });
      expect(r.json.error.message).toMatch(/several keys.*id/);
    }
    const budget = await admin('PUT', '/admin/keys/sk-gw-Shared/budget', { budget: null });
    expect(budget.json.error.code).toBe('ambiguous_key');
    // Nothing was revoked; each key is still reached by its id.
    const listed = ((await admin('GET', '/admin/keys?account=pages-b&limit=2')).json as Page).data;
    expect(listed.map((k) => k.revoked_at)).toEqual([null, null]);
    expect((await admin('POST', `/admin/keys/${ids['pages-b'][0]}/revoke`)).status).toBe(200);
  });

  it('that no key has is a 404; a unique one is found', async () => {
    const r = await admin('POST', '/admin/keys/sk-gw-nobody/revoke');
    expect(r.status).toBe(404);
    expect(r.json.error.code).toBe('key_not_found');
    const one = (await gw.services.store.getKey(ids['pages-a'][5]))!;
    const usage = await admin('GET', `/admin/usage?key=${one.prefix}`);
    expect(usage.status, usage.text).toBe(200);
  });
});
