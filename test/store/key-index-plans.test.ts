import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminService } from '../../src/admin/service.js';
import { GatewayError } from '../../src/core/errors.js';
import { createSqlStore } from '../../src/store/sql-store.js';
import type { SqlStore } from '../../src/store/index.js';
import { noting, planNodes, rowsReadFrom, type Noted, type PlanNode } from '../helpers/sql-plan.js';
import { postgresBackend, sqliteBackend, type Backend } from './harness.js';

/**
 * The operator's key list (GET /admin/keys) and the lookup of one key by id or display prefix
 * (revoke, budget, GET /admin/usage?key=) read the keys they answer with off an index: each page read
 * and sorted every key, and each lookup read every key (with 20,000 keys, 150-400 ms a call).
 */
const KEYS = 6_000;
const T0 = 1_700_000_000_000;

/**
 * `KEYS` keys, two to each creation time: every 500th of account `acct-small`, the rest of `acct-big`.
 * Prefixes are unique but for `key-7` and `key-8`, which share `sk-gw-dup`.
 */
async function seed(store: SqlStore): Promise<void> {
  for (const [id, name] of [['acct-big', 'big'], ['acct-small', 'small']])
    await store.driver.run(`INSERT INTO accounts (id, name, balance, upstreams, limits, created_at) VALUES ('${id}', '${name}', 0, NULL, '{}', ${T0})`);
  await store.driver.run(
    `WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < ${KEYS - 1})
     INSERT INTO api_keys (id, account_id, hash, prefix, name, models, actions, limits, created_at)
     SELECT 'key-' || n, CASE WHEN n % 500 = 3 THEN 'acct-small' ELSE 'acct-big' END, 'hash-' || n,
            CASE WHEN n IN (7, 8) THEN 'sk-gw-dup' ELSE 'sk-gw-' || n END, NULL, '["*"]', '["video"]', '{}',
            ${T0} + (n / 2) * 1000 FROM seq`,
  );
}

/** Each noted statement on api_keys: the rows it read (PostgreSQL, by EXPLAIN ANALYZE; -1 on SQLite) and its plan. */
async function keyReads(store: SqlStore, seen: Noted): Promise<{ sql: string; rows: number; plan: string }[]> {
  const out: { sql: string; rows: number; plan: string }[] = [];
  for (const { sql, params } of seen) {
    if (!/\bapi_keys\b/.test(sql)) continue;
    if (store.kind === 'sqlite') {
      const plan = (await store.driver.query(`EXPLAIN QUERY PLAN ${sql}`, params)).map((r) => String(r.detail));
      out.push({ sql, rows: -1, plan: plan.join('\n') });
    } else {
      const [{ 'QUERY PLAN': doc }] = (await store.driver.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params)) as Array<{ 'QUERY PLAN': unknown }>;
      const plan = (doc as Array<{ Plan: PlanNode }>)[0]!.Plan;
      out.push({ sql, rows: rowsReadFrom('api_keys', plan), plan: planNodes(plan).map((n) => `${n['Node Type']} ${n['Index Name'] ?? ''}`).join(', ') });
    }
  }
  return out;
}

/** SQLite: the statement searches (or walks in order) `index` and sorts nothing; PostgreSQL: it reads a few rows. */
function expectIndexed(store: SqlStore, reads: { sql: string; rows: number; plan: string }[], index: RegExp): void {
  expect(reads.length).toBeGreaterThan(0);
  for (const r of reads) {
    if (store.kind === 'sqlite') {
      expect(r.plan, r.sql).toMatch(index);
      expect(r.plan, r.sql).not.toMatch(/TEMP B-TREE|SCAN api_keys$/m);
    } else {
      expect(r.rows, `${r.sql}\n${r.plan}`).toBeLessThanOrEqual(KEYS / 50);
    }
  }
}

async function refusal(p: Promise<unknown>): Promise<GatewayError> {
  const e = await p.then(() => undefined, (err: unknown) => err);
  expect(e).toBeInstanceOf(GatewayError);
  return e as GatewayError;
}

for (const make of [sqliteBackend, postgresBackend] as Array<() => Backend>) {
  describe(`key reads by page, id and prefix (${make().name})`, () => {
    let backend: Backend;
    let store: SqlStore;
    /** The admin service over a store that notes every statement into `seen`. */
    const watched = (seen: Noted) => new AdminService(createSqlStore(noting(store.driver, seen)), undefined, { now: () => T0 });
    beforeAll(async () => {
      backend = make();
      ({ store } = await backend.fresh());
      await seed(store);
      if (store.kind === 'postgres') await store.driver.exec('ANALYZE api_keys');
    });
    afterAll(async () => backend.dispose());

    for (const order of ['asc', 'desc'] as const) {
      it(`a page of every key (${order}), first and after a cursor, reads that page off (created_at, id)`, async () => {
        const seen: Noted = [];
        const first = await watched(seen).listKeys({ limit: 20, order });
        const next = await watched(seen).listKeys({ limit: 20, order, after: first.keys.at(-1)!.id });
        expect(first.hasMore && next.hasMore).toBe(true);
        expect(next.keys[0]!.id).not.toBe(first.keys.at(-1)!.id);
        expectIndexed(store, await keyReads(store, seen), /USING (COVERING )?INDEX api_keys_list|USING INDEX sqlite_autoindex_api_keys_1/);
      });
    }

    it("a page of one account's keys reads that account's keys off (account_id, created_at, id)", async () => {
      const seen: Noted = [];
      const first = await watched(seen).listKeys({ account: 'small', limit: KEYS / 1000 });
      const next = await watched(seen).listKeys({ account: 'small', limit: KEYS / 1000, after: first.keys.at(-1)!.id });
      expect([first.hasMore, next.hasMore]).toEqual([true, false]);
      expect([...first.keys, ...next.keys].map((k) => k.accountId)).toEqual(Array(KEYS / 500).fill('acct-small'));
      const big = await watched(seen).listKeys({ account: 'big', limit: 20, order: 'desc' });
      await watched(seen).listKeys({ account: 'big', limit: 20, order: 'desc', after: big.keys.at(-1)!.id });
      const reads = (await keyReads(store, seen)).filter((r) => /account_id/.test(r.sql));
      expectIndexed(store, reads, /USING INDEX api_keys_account_list/);
    });

    it('a key is found by its id, then by its display prefix, off an index', async () => {
      const seen: Noted = [];
      expect((await watched(seen).findKey('key-4321')).id).toBe('key-4321');
      expect((await watched(seen).findKey('sk-gw-4321')).id).toBe('key-4321');
      expectIndexed(store, await keyReads(store, seen), /USING INDEX api_keys_prefix|USING INDEX sqlite_autoindex_api_keys_1/);
    });

    it('a prefix two keys share is a 400 naming the id as the way out; an unknown one is a 404', async () => {
      const seen: Noted = [];
      const ambiguous = await refusal(watched(seen).findKey('sk-gw-dup'));
      expect([ambiguous.status, ambiguous.code, ambiguous.param]).toEqual([400, 'ambiguous_key', 'key']);
      expect(ambiguous.message).toMatch(/id/);
      const unknown = await refusal(watched(seen).findKey('sk-gw-nope'));
      expect([unknown.status, unknown.code]).toEqual([404, 'key_not_found']);
      expect((await watched(seen).findKey('key-7')).prefix).toBe('sk-gw-dup');
      expectIndexed(store, await keyReads(store, seen), /USING INDEX api_keys_prefix|USING INDEX sqlite_autoindex_api_keys_1/);
    });
  });
}
