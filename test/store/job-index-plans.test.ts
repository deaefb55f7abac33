import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlStore } from '../../src/store/index.js';
import { budgetOps } from '../../src/store/budgets.js';
import { jobReadOps } from '../../src/store/job-reads.js';
import { noting, planNodes, rowsReadFrom, type Noted, type PlanNode } from '../helpers/sql-plan.js';
import { postgresBackend, sqliteBackend, type Backend } from './harness.js';

/**
 * A key's spend (GET /v1/usage, a budget's new window) and an account's job list filtered by state or
 * model read the jobs they are about off an index, not every job of every account (or of the
 * account) by time: with 200,000 jobs either held the event loop ~0.4 s on SQLite.
 */
const JOBS = 8_000;
const T0 = 1_700_000_000_000;

/**
 * `JOBS` jobs of account `acct-big`, key `key-big`, model sora-2, all completed; then a few of
 * `key-small`, which has a monthly budget whose counter is not there yet (its spend in the month is
 * read from the jobs; its lifetime spend, from the ledger's running total).
 */
async function seed(store: SqlStore): Promise<void> {
  await store.driver.run(`INSERT INTO accounts (id, name, balance, upstreams, limits, created_at) VALUES ('acct-big', 'big', 0, NULL, '{}', ${T0})`);
  await store.driver.run(
    `INSERT INTO api_keys (id, account_id, hash, prefix, models, actions, limits, created_at, budget_period, budget_period_limit)
     VALUES ('key-small', 'acct-big', 'h', 'sk-gw-small', '["*"]', '["video"]', '{}', ${T0}, 'month', 1000000)`,
  );
  await store.driver.run(
    `WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < ${JOBS - 1})
     INSERT INTO jobs (id, account_id, key_id, model, vendor, state, est_seconds, hold_micros, price_per_second_micros,
                       request, task_meta, vendor_data, outputs, created_at, updated_at, next_poll_at, deadline_at)
     SELECT 'job-' || n, 'acct-big', CASE WHEN n % 1000 = 7 THEN 'key-small' ELSE 'key-big' END,
            CASE WHEN n % 1000 = 9 THEN 'veo-3' ELSE 'sora-2' END, 'sora',
            CASE WHEN n % 1000 = 11 THEN 'failed' ELSE 'completed' END, 4, 0, 100000, '{}', '{}', '{}', '[]',
            ${T0} + n * 1000, ${T0}, ${T0}, ${T0} FROM seq`,
  );
}

/** The job rows each statement noted read (PostgreSQL: by EXPLAIN ANALYZE), and the SQLite plan's lines that read jobs. */
async function jobReads(store: SqlStore, seen: Noted): Promise<{ rows: number; plan: string[] }[]> {
  const out: { rows: number; plan: string[] }[] = [];
  for (const { sql, params } of seen) {
    if (!/\bjobs\b/.test(sql)) continue;
    if (store.kind === 'sqlite') {
      const plan = (await store.driver.query(`EXPLAIN QUERY PLAN ${sql}`, params)).map((r) => String(r.detail));
      out.push({ rows: -1, plan });
    } else {
      const [{ 'QUERY PLAN': doc }] = (await store.driver.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params)) as Array<{ 'QUERY PLAN': unknown }>;
      const plan = (doc as Array<{ Plan: PlanNode }>)[0]!.Plan;
      out.push({ rows: rowsReadFrom('jobs', plan), plan: planNodes(plan).map((n) => `${n['Node Type']} ${n['Index Name'] ?? ''}`) });
    }
  }
  return out;
}

for (const make of [sqliteBackend, postgresBackend] as Array<() => Backend>) {
  describe(`job reads by key, state and model (${make().name})`, () => {
    let backend: Backend;
    let store: SqlStore;
    beforeAll(async () => {
      backend = make();
      ({ store } = await backend.fresh());
      await seed(store);
      if (store.kind === 'postgres') await store.driver.exec('ANALYZE jobs');
    });
    afterAll(async () => backend.dispose());

    it("a key's spend in its budget's period reads that key's jobs only", async () => {
      const seen: Noted = [];
      await budgetOps(noting(store.driver, seen)).keySpend('key-small', T0 + JOBS * 1000);
      const reads = await jobReads(store, seen);
      expect(reads.length).toBeGreaterThan(0);
      for (const r of reads) {
        if (store.kind === 'sqlite') expect(r.plan.join('\n')).toMatch(/SEARCH j USING INDEX jobs_key_time/);
        else expect(r.rows, r.plan.join(', ')).toBeLessThanOrEqual(JOBS / 100);
      }
    });

    for (const [what, filter] of [['state', { state: 'failed' as const }], ['model', { model: 'veo-3' }]] as const) {
      it(`an account's list by ${what} reads the jobs of that ${what}`, async () => {
        const seen: Noted = [];
        const rows = await jobReadOps(noting(store.driver, seen)).listJobs('acct-big', { ...filter, limit: 21, order: 'desc' });
        expect(rows.length).toBe(JOBS / 1000);
        for (const r of await jobReads(store, seen)) {
          if (store.kind === 'sqlite') expect(r.plan.join('\n')).toMatch(what === 'state' ? /jobs_account_state_list/ : /jobs_account_model_list/);
          else expect(r.rows, r.plan.join(', ')).toBeLessThanOrEqual(JOBS / 100);
        }
      });
    }
  });
}
