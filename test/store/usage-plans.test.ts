import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyUsage } from '../../src/admin/usage.js';
import { createSqlStore, type SqlStore } from '../../src/store/index.js';
import { int } from '../../src/store/rows.js';
import type { UsageFilter } from '../../src/store/types.js';
import { noting, planNodes, rowsReadFrom, type Noted, type PlanNode } from '../helpers/sql-plan.js';
import { postgresBackend, sqliteBackend, type Backend } from './harness.js';

/**
 * GET /v1/usage and the usage reports do bounded work whatever a key's history: the lifetime `usage`
 * reads the key's one running total, whole days come from the daily rollup, and only the hours at
 * either end of a range cut within a day are read from the ledger, off an index. Before, every
 * GET /v1/usage summed all the key's ledger rows (~160 ms of the event loop's time for 200,000 rows).
 */
const DAY = 86_400_000;
const DAYS = 60;
const START = Date.UTC(2026, 0, 1);
/** Noon on the last day of the seed: GET /v1/usage's default range is that month up to the end of that day. */
const NOW = START + (DAYS - 1) * DAY + DAY / 2;
const BIG = 12_000;

/** `BIG` charges of key-big (two models) spread over `DAYS` days, a few of key-small, and another account's. */
async function seed(store: SqlStore): Promise<void> {
  for (const [id, name] of [
    ['acct-big', 'big'],
    ['acct-other', 'other'],
  ]) {
    await store.driver.run(`INSERT INTO accounts (id, name, balance, upstreams, limits, created_at) VALUES (?, ?, 0, NULL, '{}', ${START})`, [id, name]);
  }
  const charges = Array.from({ length: BIG + BIG / 4 }, (_, i) => {
    const other = i >= BIG;
    const keyId = other ? 'key-other' : i % 500 === 7 ? 'key-small' : 'key-big';
    const at = START + Math.floor(((i % BIG) / BIG) * DAYS * DAY) + (i % 977);
    return { accountId: other ? 'acct-other' : 'acct-big', amount: 10 + (i % 13), ref: `c-${i}`, note: null, now: at, by: { keyId, model: i % 3 ? 'emb-small' : 'emb-large' } };
  });
  for (let i = 0; i < charges.length; i += 500) await store.chargeMany(charges.slice(i, i + 500));
  // Other keys' totals and days (after the seed's, outside every range asked for here), so that the
  // rollup tables have the size of a gateway's and a planner finds no reason to read them whole.
  await store.driver.run(
    `WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < 19999)
     INSERT INTO usage_daily (key_id, day, model, account_id, spent, requests)
     SELECT 'key-filler-' || (n % 500), ${START / DAY + DAYS + 10} + n / 500, 'emb-small', 'acct-filler', 1, 1 FROM seq`,
  );
  await store.driver.run(
    `WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < 4999) INSERT INTO key_totals (key_id, spent) SELECT 'key-filler-' || n, 1 FROM seq`,
  );
}

interface Read {
  sql: string;
  /** SQLite: the plan's lines. PostgreSQL: the plan's nodes. */
  plan: string[];
  /** PostgreSQL: rows read from each table (-1 on SQLite). */
  ledger: number;
  daily: number;
  totals: number;
}

async function reads(store: SqlStore, seen: Noted): Promise<Read[]> {
  const out: Read[] = [];
  for (const { sql, params } of seen) {
    if (!/\b(ledger|usage_daily|key_totals)\b/.test(sql)) continue;
    if (store.kind === 'sqlite') {
      const plan = (await store.driver.query(`EXPLAIN QUERY PLAN ${sql}`, params)).map((r) => String(r.detail));
      out.push({ sql, plan, ledger: -1, daily: -1, totals: -1 });
    } else {
      const [{ 'QUERY PLAN': doc }] = (await store.driver.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params)) as Array<{ 'QUERY PLAN': unknown }>;
      const plan = (doc as Array<{ Plan: PlanNode }>)[0]!.Plan;
      out.push({
        sql,
        plan: planNodes(plan).map((n) => `${n['Node Type']} ${n['Relation Name'] ?? ''} ${n['Index Name'] ?? ''}`),
        ledger: rowsReadFrom('ledger', plan),
        daily: rowsReadFrom('usage_daily', plan),
        totals: rowsReadFrom('key_totals', plan),
      });
    }
  }
  return out;
}

/** On SQLite, every table the statement reads is searched by an index, never scanned. */
function expectSearched(r: Read): void {
  const lines = r.plan.join('\n');
  expect(lines, r.sql).not.toMatch(/SCAN (ledger|usage_daily|key_totals)\b/);
  expect(lines, r.sql).toMatch(/SEARCH (ledger|usage_daily|key_totals) USING (COVERING )?INDEX/);
}

for (const make of [sqliteBackend, postgresBackend] as Array<() => Backend>) {
  describe(`usage reads (${make().name})`, () => {
    let backend: Backend;
    let store: SqlStore;
    beforeAll(async () => {
      backend = make();
      ({ store } = await backend.fresh());
      await seed(store);
      if (store.kind === 'postgres') await store.driver.exec('ANALYZE ledger; ANALYZE usage_daily; ANALYZE key_totals');
    }, 60_000);
    afterAll(async () => backend.dispose());

    it("GET /v1/usage reads the key's running total and its days' rollup rows, no ledger row", async () => {
      const seen: Noted = [];
      const noted = createSqlStore(noting(store.driver, seen));
      const account = (await store.getAccount('acct-big'))!;
      const key = { id: 'key-big', accountId: account.id, hash: 'h', prefix: 'sk-gw-big', name: null, models: ['*'], actions: [], limits: {}, expiresAt: null, revokedAt: null, lastUsedAt: null, createdAt: START };
      const answer = await keyUsage(noted, account, key, {}, NOW);
      const [spent] = await store.driver.query("SELECT SUM(0 - delta) AS spent FROM ledger WHERE key_id = 'key-big'");
      expect(Math.round(answer.data.usage * 1e6)).toBe(int(spent!.spent));
      const found = await reads(store, seen);
      expect(found.length).toBeGreaterThan(0);
      for (const r of found) {
        expect(r.sql).not.toMatch(/\bFROM ledger\b/);
        if (store.kind === 'sqlite') expectSearched(r);
        // A month of days, two models each; the total is one row.
        else expect(r.daily + r.totals, `${r.sql}\n${r.plan.join(', ')}`).toBeLessThanOrEqual(31 * 2 + 1);
      }
    });

    for (const [name, filter, index] of [
      ['a key', { keyId: 'key-big' }, /ledger_key_time/],
      ['an account', { accountId: 'acct-big' }, /ledger_account_time/],
      ['every account', {}, /ledger_time/],
    ] as const) {
      it(`a report on ${name} cut within days reads the ledger rows of those hours only, off an index`, async () => {
        // From the evening of day 3 to the morning of day 40: two partial days at its ends.
        const from = START + 3 * DAY + 18 * 3_600_000;
        const to = START + 40 * DAY + 6 * 3_600_000;
        const [edges] = await store.driver.query('SELECT COUNT(*) AS n FROM ledger WHERE (created_at >= ? AND created_at < ?) OR (created_at >= ? AND created_at < ?)', [
          from,
          START + 4 * DAY,
          START + 40 * DAY,
          to,
        ]);
        for (const groupBy of ['day', 'model', 'key'] as const) {
          const seen: Noted = [];
          const f: UsageFilter = { ...filter, from, to, groupBy };
          await createSqlStore(noting(store.driver, seen)).usage(f);
          const found = await reads(store, seen);
          expect(found.map((r) => (/\bFROM ledger\b/.test(r.sql) ? 'ledger' : 'usage_daily'))).toEqual(['usage_daily', 'ledger', 'ledger']);
          for (const r of found) {
            if (store.kind === 'sqlite') {
              expectSearched(r);
              if (/\bFROM ledger\b/.test(r.sql)) expect(r.plan.join('\n')).toMatch(index);
            } else {
              expect(r.ledger, `${r.sql}\n${r.plan.join(', ')}`).toBeLessThanOrEqual(int(edges!.n));
              // The whole days between: 36 days, two models, at most three keys.
              expect(r.daily, `${r.sql}\n${r.plan.join(', ')}`).toBeLessThanOrEqual(36 * 2 * 3);
            }
          }
        }
      });
    }
  });
}
