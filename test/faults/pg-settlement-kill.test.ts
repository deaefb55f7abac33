import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlStore } from '../../src/store/index.js';
import { balanceOf, completion, ledgerSum, makeAccount, PG_URL, postgresBackend, processingJob } from '../store/harness.js';

/**
 * PostgreSQL loses the connection in the middle of a settlement transaction: the job's row is already
 * marked completed inside the transaction when the server terminates that backend. The settlement
 * fails as a whole (no half-written capture), the pool replaces the dead connection, and retrying the
 * settlement applies it exactly once: the ledger equals the balance throughout.
 */
const backend = postgresBackend();
let store: SqlStore;
let schema: string;
let admin: pg.Client;

beforeAll(async () => {
  const fresh = await backend.fresh();
  store = fresh.store;
  schema = new URL(fresh.url).searchParams.get('schema')!;
  admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
});
afterAll(async () => {
  await admin?.end();
  await backend.dispose();
});

/** The backend waiting for a lock the blocker holds: the settlement's, stopped mid-transaction. */
async function waitForLockWaiter(blockerPid: number): Promise<number> {
  for (let i = 0; i < 500; i++) {
    const r = await admin.query(`SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [blockerPid]);
    if (r.rows.length === 1) return r.rows[0].pid as number;
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error('the settlement never waited on the account row');
}

describe('PostgreSQL connection killed mid-settlement', () => {
  it('the settlement fails whole, and a retry settles exactly once', async () => {
    const account = await makeAccount(store, 10_000_000);
    const jobId = await processingJob(store, account.id, 2_000_000);
    const before = await balanceOf(store, account.id);
    expect(await ledgerSum(store, account.id)).toBe(before);

    // Another session holds the account row, so the settlement stops after updating the job row.
    const blocker = new pg.Client({ connectionString: PG_URL });
    await blocker.connect();
    const blockerPid = (await blocker.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
    await blocker.query('BEGIN');
    await blocker.query(`SELECT id FROM "${schema}".accounts WHERE id = $1 FOR UPDATE`, [account.id]);
    const settling = store.completeJob(jobId, completion(1_500_000)).then(
      (v) => ({ ok: true as const, v }),
      (e: unknown) => ({ ok: false as const, e }),
    );
    const pid = await waitForLockWaiter(blockerPid);
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await blocker.query('ROLLBACK');
    await blocker.end();

    const outcome = await settling;
    expect(outcome.ok, 'a settlement whose connection died must not report success').toBe(false);
    // Nothing of it stuck: still processing, the hold in place, the ledger equal to the balance.
    expect((await store.getJob(jobId))!.state).toBe('processing');
    expect(await balanceOf(store, account.id)).toBe(before);
    expect(await ledgerSum(store, account.id)).toBe(before);

    // The pool has a working connection again; the retry settles once, a second retry does nothing.
    expect(await store.completeJob(jobId, completion(1_500_000))).toBe(true);
    expect(await store.completeJob(jobId, completion(1_500_000))).toBe(false);
    const after = await balanceOf(store, account.id);
    expect(after).toBe(before + 2_000_000 - 1_500_000);
    expect(await ledgerSum(store, account.id)).toBe(after);
    const kinds = (await store.listLedger(account.id, { ref: jobId })).map((e) => e.kind).sort();
    expect(kinds).toEqual(['capture', 'hold', 'release']);
  }, 60_000);
});
