import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB_STATES, sharedJobCounts } from '../../src/ops/outbox-backlog.js';
import type { SqlStore } from '../../src/store/index.js';
import { operationsOps } from '../../src/store/ops.js';
import { noting, rowsReadFrom, type Noted, type PlanNode } from '../helpers/sql-plan.js';
import { postgresBackend, sqliteBackend, type Backend } from '../store/harness.js';

/**
 * What the jobs-by-state gauge reads on each /metrics scrape (`countJobsByState`): per state, a count
 * that stops at its cap, off the (state, next_poll_at) index. Finished jobs pile up until they are
 * purged; a count over the whole table read every one of them on every scrape.
 */

const COMPLETED = 5_000;
const PROCESSING = 40;
const CAP = 1_000;

/** `count` jobs of `account` in `state`, in one statement. */
async function jobs(store: SqlStore, account: string, prefix: string, state: string, count: number): Promise<void> {
  await store.driver.run(
    `WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < ${count - 1})
     INSERT INTO jobs
       (id, account_id, key_id, model, vendor, state, est_seconds, hold_micros, price_per_second_micros, request, task_meta,
        vendor_data, outputs, created_at, updated_at, next_poll_at, deadline_at)
     SELECT '${prefix}' || n, '${account}', 'key_1', 'sora-2', 'sora', '${state}', 4, 0, 0, '{}', '{}', '{}', '[]', n, n, n, n + 1000
       FROM seq`,
  );
}

for (const make of [sqliteBackend, postgresBackend] as Array<() => Backend>) {
  describe(`jobs-by-state gauge (${make().name})`, () => {
    let backend: Backend;
    let store: SqlStore;
    beforeAll(async () => {
      backend = make();
      ({ store } = await backend.fresh());
      const account = await store.createAccount({ name: 'gauge', balance: 0, upstreams: null, limits: {}, now: 0 });
      await jobs(store, account.id, 'job_done_', 'completed', COMPLETED);
      await jobs(store, account.id, 'job_live_', 'processing', PROCESSING);
      if (store.kind === 'postgres') await store.driver.exec('ANALYZE jobs');
    });
    afterAll(async () => backend.dispose());

    it('counts each state exactly below the cap, reads the cap above it, and reports empty states as 0', async () => {
      expect(await store.countJobsByState(JOB_STATES, CAP)).toEqual({ submitting: 0, processing: PROCESSING, completed: CAP, failed: 0, rejected: 0 });
      expect(await store.countJobsByState(['completed', 'processing'], COMPLETED + 1)).toEqual({ completed: COMPLETED, processing: PROCESSING });
    });

    it('reads at most the cap of index entries per state, never the whole table', async () => {
      const seen: Noted = [];
      await operationsOps(noting(store.driver, seen)).countJobsByState(JOB_STATES, CAP);
      expect(seen).toHaveLength(JOB_STATES.length);
      for (const { sql, params } of seen) {
        if (store.kind === 'sqlite') {
          const plan = (await store.driver.query(`EXPLAIN QUERY PLAN ${sql}`, params)).map((r) => String(r.detail));
          const reads = plan.filter((line) => /^(?:SCAN|SEARCH) jobs\b/.test(line));
          expect(reads, plan.join('\n')).toEqual(['SEARCH jobs USING COVERING INDEX jobs_due (state=?)']);
          expect(sql).toMatch(/LIMIT/);
        } else {
          const [{ 'QUERY PLAN': doc }] = (await store.driver.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params)) as Array<{ 'QUERY PLAN': unknown }>;
          const plan = (doc as Array<{ Plan: PlanNode }>)[0]!.Plan;
          // The state's CAP entries at most: not the table's 5,040 rows.
          expect(rowsReadFrom('jobs', plan), JSON.stringify(plan)).toBeLessThanOrEqual(CAP);
        }
      }
    });
  });
}

describe('jobs-by-state on /metrics', () => {
  it('scrapes arriving during a read share it; a later scrape reads again', async () => {
    const asked: Array<{ states: readonly string[]; cap: number }> = [];
    let answer: (counts: Record<string, number>) => void = () => undefined;
    const store = {
      countJobsByState: (states: readonly string[], cap: number) => {
        asked.push({ states, cap });
        return new Promise<Record<string, number>>((r) => (answer = r));
      },
    };
    const together = [sharedJobCounts(store), sharedJobCounts(store)];
    expect(asked).toEqual([{ states: ['submitting', 'processing', 'completed', 'failed', 'rejected'], cap: 100_000 }]);
    answer({ processing: 3 });
    expect(await Promise.all(together)).toEqual([{ processing: 3 }, { processing: 3 }]);
    const later = sharedJobCounts(store);
    expect(asked).toHaveLength(2);
    answer({ processing: 2 });
    expect(await later).toEqual({ processing: 2 });
  });
});
