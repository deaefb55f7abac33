import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlStore } from '../../src/store/index.js';
import { operationsOps } from '../../src/store/ops.js';
import { noting, planNodes, rowsReadFrom, type Noted, type PlanNode } from '../helpers/sql-plan.js';
import { postgresBackend, sqliteBackend, type Backend } from '../store/harness.js';

/**
 * What the outbox backlog gauges read on each /metrics scrape (`outboxBacklog`): a count that stops
 * at its cap and the oldest pending row's age, each a bounded read off the (state, created_at)
 * index, so that a backlog of millions does not make every scrape count it.
 */

const PENDING = 6_000;
const FINISHED = 3_000;
const CAP = 1_000;
/** The oldest pending row's created_at; finished rows are older still, and must not count. */
const OLDEST = 100_000;

/** `count` rows in `state` in one statement, their created_at from `base` on, out of insertion order. */
async function rows(store: SqlStore, prefix: string, state: string, count: number, base: number): Promise<void> {
  await store.driver.run(
    `WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < ${count - 1})
     INSERT INTO webhook_outbox
       (id, event_id, account_id, endpoint_id, url, event_type, payload, state, attempts, next_attempt_at, lease_until, created_at, delivered_at)
     SELECT '${prefix}' || n, 'evt_${prefix}' || n, 'acct_' || (n % 7), NULL, 'https://down.example/hook', 'video.completed', '{}',
            '${state}', 1, 0, NULL, ${base} + ((n * 7919 + 13) % ${count}), NULL
       FROM seq`,
  );
}

for (const make of [sqliteBackend, postgresBackend] as Array<() => Backend>) {
  describe(`outbox backlog gauges (${make().name})`, () => {
    let backend: Backend;
    let store: SqlStore;
    beforeAll(async () => {
      backend = make();
      ({ store } = await backend.fresh());
      // Finished rows first and oldest: a read that does not seek to the pending ones passes them all.
      await rows(store, 'msg_done_', 'delivered', FINISHED, 0);
      await rows(store, 'msg_wait_', 'pending', PENDING, OLDEST);
      // The statistics autovacuum keeps on a table written to all day; the plans below are chosen by
      // them (see store/ops.ts). SQLite's planner needs none.
      if (store.kind === 'postgres') await store.driver.exec('ANALYZE webhook_outbox');
    });
    afterAll(async () => backend.dispose());

    it('counts exactly below the cap, reads the cap above it, and finds the oldest pending row', async () => {
      expect(await store.outboxBacklog(CAP)).toEqual({ pending: CAP, oldestCreatedAt: OLDEST });
      expect(await store.outboxBacklog(PENDING + 1)).toEqual({ pending: PENDING, oldestCreatedAt: OLDEST });
      const empty = await make().fresh();
      try {
        expect(await empty.store.outboxBacklog(CAP)).toEqual({ pending: 0, oldestCreatedAt: null });
      } finally {
        await empty.store.close();
      }
    });

    it('reads at most the cap of index entries and one for the oldest, never the whole backlog', async () => {
      const seen: Noted = [];
      await operationsOps(noting(store.driver, seen)).outboxBacklog(CAP);
      expect(seen.length).toBeGreaterThan(0);
      for (const { sql, params } of seen) {
        if (store.kind === 'sqlite') {
          const plan = (await store.driver.query(`EXPLAIN QUERY PLAN ${sql}`, params)).map((r) => String(r.detail));
          const reads = plan.filter((line) => /^(?:SCAN|SEARCH) webhook_outbox\b/.test(line));
          // One seek to the first pending entry of the age index, read in its order (no sort), and a LIMIT.
          expect(reads, plan.join('\n')).toEqual(['SEARCH webhook_outbox USING COVERING INDEX webhook_outbox_pending_age (state=?)']);
          expect(plan.some((line) => line.includes('TEMP B-TREE')), plan.join('\n')).toBe(false);
          expect(sql).toMatch(/LIMIT/);
        } else {
          const [{ 'QUERY PLAN': doc }] = (await store.driver.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params)) as Array<{ 'QUERY PLAN': unknown }>;
          const plan = (doc as Array<{ Plan: PlanNode }>)[0]!.Plan;
          const scans = planNodes(plan).filter((n) => n['Relation Name'] === 'webhook_outbox');
          expect(scans.map((n) => n['Index Name']), JSON.stringify(plan)).toEqual(['webhook_outbox_pending_age']);
          expect(planNodes(plan).some((n) => n['Node Type'] === 'Sort'), JSON.stringify(plan)).toBe(false);
          // The count's CAP entries, or the oldest's one: not the 9,000 rows of the table.
          expect(rowsReadFrom('webhook_outbox', plan)).toBeLessThanOrEqual(CAP);
        }
      }
    });
  });
}
