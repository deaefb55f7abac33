import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlDriver, SqlExecutor } from '../../src/store/driver.js';
import { jobOps } from '../../src/store/jobs.js';
import type { SqlStore } from '../../src/store/index.js';
import { completion, makeAccount, newJob, sqliteBackend, T0, type Backend } from './harness.js';

/**
 * On PostgreSQL a transaction locks each row it updates until it ends, so two kinds of transaction
 * that lock the same rows in opposite orders can each wait for the other, and the server then ends
 * one as a deadlock (a failed create, or a settlement retried later). A video create and its
 * settlement both move a budgeted key's spend counters and its account's balance: they must take
 * them in one order, the counters first. The statements are the same SQL on both engines, so their
 * order is read here from the SQLite store.
 */
function recording(db: SqlDriver, seen: string[]): SqlDriver {
  const note = (tx: SqlExecutor): SqlExecutor => ({
    query: (sql, params) => (seen.push(sql), tx.query(sql, params)),
    run: (sql, params) => (seen.push(sql), tx.run(sql, params)),
    exec: (script) => (seen.push(script), tx.exec(script)),
  });
  return { ...note(db), dialect: db.dialect, transaction: (fn) => db.transaction((tx) => fn(note(tx))), session: (fn) => db.session(fn), close: () => db.close() };
}

const firstAt = (seen: string[], re: RegExp) => seen.findIndex((sql) => re.test(sql));
const SPEND_WRITE = /^\s*(UPDATE|INSERT INTO) key_spend/i;
const BALANCE_WRITE = /^\s*UPDATE accounts SET balance/i;

let backend: Backend;
let store: SqlStore;
beforeAll(async () => {
  backend = sqliteBackend();
  store = (await backend.fresh()).store;
});
afterAll(async () => {
  await backend?.dispose();
});

describe("a budgeted key's counters and its account's balance", () => {
  it('are locked in the same order by a video create and by its settlement', async () => {
    const account = await makeAccount(store, 10_000_000);
    await store.driver.run(
      `INSERT INTO api_keys (id, account_id, hash, prefix, models, actions, limits, created_at, budget_total, budget_period, budget_period_limit)
       VALUES ('key-budgeted', ?, 'h-budgeted', 'sk-gw-budg', '["*"]', '["video"]', '{}', ${T0}, 5000000, 'day', 5000000)`,
      [account.id],
    );
    const created: string[] = [];
    const job = newJob(account.id, { keyId: 'key-budgeted' });
    expect(await jobOps(recording(store.driver, created)).createJobWithHold(job, 500_000, T0)).toBe('ok');
    await store.markJobSubmitted(job.id, { upstream: 'wan-main', taskId: 'task-1', publicId: 'vid_1', taskMeta: {}, nextPollAt: T0 + 5_000, now: T0 + 1 });

    const settled: string[] = [];
    expect(await jobOps(recording(store.driver, settled)).completeJob(job.id, completion(300_000))).toBe(true);

    for (const [what, seen] of [['create', created], ['settlement', settled]] as const) {
      const spend = firstAt(seen, SPEND_WRITE);
      const balance = firstAt(seen, BALANCE_WRITE);
      expect(spend, `${what}: ${seen.join(' | ')}`).toBeGreaterThanOrEqual(0);
      expect(balance, `${what}: ${seen.join(' | ')}`).toBeGreaterThanOrEqual(0);
      expect(spend, `${what} moves the key's counters before the balance`).toBeLessThan(balance);
    }
  });
});
