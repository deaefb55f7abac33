import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlValue } from '../../src/store/driver.js';
import type { SqlStore } from '../../src/store/index.js';
import { webhookOps } from '../../src/store/webhooks.js';
import { noting, rowsReadFrom, type PlanNode } from '../helpers/sql-plan.js';
import { postgresBackend, sqliteBackend, type Backend } from '../store/harness.js';

/**
 * The dispatcher's claim (`dueDeliveries`): due pending rows nobody holds, every account's oldest
 * before anyone's second, at most `perAccount` per account and `limit` in all; and its cost does not
 * grow with one account's backlog (a receiver down for a day), since it runs every tick.
 */

interface Row {
  id: string;
  account: string;
  at: number;
  state?: 'pending' | 'delivered' | 'failed';
  leaseUntil?: number | null;
}

const INSERT = `INSERT INTO webhook_outbox
  (id, event_id, account_id, endpoint_id, url, event_type, payload, state, attempts, next_attempt_at, lease_until, created_at, delivered_at)
  VALUES (?, ?, ?, NULL, ?, 'video.completed', '{}', ?, 0, ?, ?, 0, NULL)`;

async function put(store: SqlStore, rows: Row[]): Promise<void> {
  await store.driver.transaction(async (tx) => {
    for (const r of rows) await tx.run(INSERT, [r.id, `evt_${r.id}`, r.account, `https://${r.account}.example/hook`, r.state ?? 'pending', r.at, r.leaseUntil ?? null]);
  });
}

/** `count` due rows of one account in one statement (both engines have recursive CTEs). */
async function backlog(store: SqlStore, account: string, count: number, firstAt: number): Promise<void> {
  await store.driver.run(
    `WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < ${count - 1})
     INSERT INTO webhook_outbox
       (id, event_id, account_id, endpoint_id, url, event_type, payload, state, attempts, next_attempt_at, lease_until, created_at, delivered_at)
     SELECT 'msg_backlog_' || (n + 1000000), 'evt_backlog_' || n, '${account}', NULL, 'https://down.example/hook', 'video.completed', '{}',
            'pending', 0, ${firstAt} + n, NULL, 0, NULL
       FROM seq`,
  );
}

/** What the claim must answer, worked out by hand from every row. */
function expected(rows: Row[], now: number, limit: number, perAccount: number): string[] {
  const due = rows
    .filter((r) => (r.state ?? 'pending') === 'pending' && r.at <= now && (r.leaseUntil == null || r.leaseUntil <= now))
    .sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const turns = new Map<string, number>();
  const numbered = due.map((r) => {
    const turn = (turns.get(r.account) ?? 0) + 1;
    turns.set(r.account, turn);
    return { r, turn };
  });
  return numbered
    .filter((x) => x.turn <= perAccount)
    .sort((a, b) => a.turn - b.turn || a.r.at - b.r.at || (a.r.id < b.r.id ? -1 : 1))
    .slice(0, limit)
    .map((x) => x.r.id);
}

const ids = async (store: SqlStore, now: number, limit: number, perAccount: number) =>
  (await store.dueDeliveries(now, { limit, perAccount })).map((d) => d.id);

for (const make of [sqliteBackend, postgresBackend] as Array<() => Backend>) {
  describe(`webhook claims (${make().name})`, () => {
    let backend: Backend;
    beforeAll(() => {
      backend = make();
    });
    afterAll(async () => backend.dispose());

    it('every account with a due row gets its oldest one before any account gets a second; at most perAccount each', async () => {
      const { store } = await backend.fresh();
      const rows: Row[] = [];
      for (let a = 0; a < 12; a++) for (let i = 0; i < 5; i++) rows.push({ id: `m_${a}_${i}`, account: `acct_${String(a).padStart(2, '0')}`, at: 1_000 + i * 100 + a });
      await put(store, rows);
      const page = await store.dueDeliveries(5_000, { limit: 100, perAccount: 3 });
      expect(page).toHaveLength(36);
      // Turn by turn: the first 12 rows are the 12 accounts' oldest, the next 12 their second...
      expect(page.slice(0, 12).map((d) => d.id)).toEqual(Array.from({ length: 12 }, (_, a) => `m_${a}_0`));
      expect(page.slice(12, 24).map((d) => d.id)).toEqual(Array.from({ length: 12 }, (_, a) => `m_${a}_1`));
      expect(page.slice(24).map((d) => d.id)).toEqual(Array.from({ length: 12 }, (_, a) => `m_${a}_2`));
      expect(page[0]).toEqual({ id: 'm_0_0', accountId: 'acct_00', url: 'https://acct_00.example/hook' });
      expect(await ids(store, 5_000, 7, 3)).toEqual(Array.from({ length: 7 }, (_, a) => `m_${a}_0`));
    });

    it('rows under a live lease, not yet due, or finished are left out; an ended lease is due again', async () => {
      const { store } = await backend.fresh();
      await put(store, [
        { id: 'a_held', account: 'a', at: 100, leaseUntil: 9_000 },
        { id: 'a_lapsed', account: 'a', at: 200, leaseUntil: 5_000 },
        { id: 'a_next', account: 'a', at: 300 },
        { id: 'b_later', account: 'b', at: 6_000 },
        { id: 'c_done', account: 'c', at: 50, state: 'delivered' },
        { id: 'c_failed', account: 'c', at: 60, state: 'failed' },
        { id: 'd_only', account: 'd', at: 400 },
      ]);
      expect(await ids(store, 5_000, 10, 5)).toEqual(['a_lapsed', 'd_only', 'a_next']);
      expect(await ids(store, 4_999, 10, 5)).toEqual(['a_next', 'd_only']);
      expect(await ids(store, 9_000, 10, 5)).toEqual(['a_held', 'd_only', 'b_later', 'a_lapsed', 'a_next']);
      expect(await ids(store, 99, 10, 5)).toEqual([]);
    });

    it('with more accounts than fit, the ones whose oldest due row has waited longest go first, whatever their ids', async () => {
      const { store } = await backend.fresh();
      const rows: Row[] = [];
      // Account ids run opposite to age, so an answer drawn from the first ids in index order would differ.
      for (let a = 0; a < 30; a++) for (let i = 0; i < 2; i++) rows.push({ id: `m_${a}_${i}`, account: `acct_${String(99 - a)}`, at: 1_000 + a * 10 + i });
      await put(store, rows);
      expect(await ids(store, 5_000, 4, 2)).toEqual(['m_0_0', 'm_1_0', 'm_2_0', 'm_3_0']);
      // The oldest's rows settle: the next accounts move up.
      await store.driver.run(`UPDATE webhook_outbox SET state = 'delivered' WHERE account_id IN ('acct_99', 'acct_98')`);
      expect(await ids(store, 5_000, 4, 2)).toEqual(['m_2_0', 'm_3_0', 'm_4_0', 'm_5_0']);
    });

    it('answers as numbering every due row per account would, over mixed random outboxes', async () => {
      const { store } = await backend.fresh();
      let seed = 7;
      const rnd = (n: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31), seed % n);
      const rows: Row[] = [];
      for (let i = 0; i < 600; i++) {
        const kind = rnd(10);
        rows.push({
          id: `m_${String(rnd(100_000)).padStart(5, '0')}_${i}`,
          account: `acct_${rnd(25)}`,
          at: rnd(40) * 50, // many ties on next_attempt_at: the id decides
          state: kind === 0 ? 'delivered' : kind === 1 ? 'failed' : 'pending',
          leaseUntil: kind === 2 ? rnd(3_000) : null,
        });
      }
      await put(store, rows);
      for (const [now, limit, perAccount] of [
        [1_000, 10, 2],
        [2_000, 48, 6],
        [1_500, 1_000, 1],
        [2_000, 3, 100],
        [700, 26, 26],
        [0, 5, 5],
      ] as const) {
        expect(await ids(store, now, limit, perAccount), `${now} ${limit} ${perAccount}`).toEqual(expected(rows, now, limit, perAccount));
      }
    });

    it("one account's backlog of 50,000 due rows is not read: the claim walks the account index", async () => {
      const { store } = await backend.fresh();
      await backlog(store, 'acct_down', 50_000, 1_000);
      await put(store, [
        { id: 'm_up_1', account: 'acct_up', at: 70_000 },
        { id: 'm_up_2', account: 'acct_up', at: 70_001 },
        { id: 'm_other', account: 'acct_other', at: 80_000 },
        { id: 'm_held', account: 'acct_down', at: 10, leaseUntil: 999_999 },
      ]);
      const seen: Array<{ sql: string; params: readonly SqlValue[] }> = [];
      const claims = webhookOps(noting(store.driver, seen));
      const page = await claims.dueDeliveries(100_000, { limit: 48, perAccount: 6 });
      expect(page.map((d) => d.id)).toEqual([
        'msg_backlog_1000000',
        'm_up_1',
        'm_other',
        'msg_backlog_1000001',
        'm_up_2',
        ...Array.from({ length: 4 }, (_, i) => `msg_backlog_${1000002 + i}`),
      ]);
      expect(seen.length).toBeGreaterThan(0);

      if (store.kind === 'sqlite') {
        for (const { sql, params } of seen) {
          const plan = (await store.driver.query(`EXPLAIN QUERY PLAN ${sql}`, params)).map((r) => String(r.detail));
          // The table under any of its names in this statement: every read of it is a seek through
          // the per-account index, or one row by its key, never the due index and a sort of its rows.
          const names = new Set(['webhook_outbox', ...[...sql.matchAll(/webhook_outbox\s+(?:AS\s+)?(\w+)/gi)].map((m) => m[1]!)]);
          const reads = plan.filter((line) => names.has(/^(?:SCAN|SEARCH) (\w+)/.exec(line)?.[1] ?? ''));
          expect(reads.length, plan.join('\n')).toBeGreaterThan(0);
          for (const line of reads) {
            expect(line, plan.join('\n')).toMatch(/^SEARCH \w+ USING (?:COVERING )?INDEX (?:webhook_outbox_account_due \(state=\?|sqlite_autoindex_webhook_outbox_1 \(id=\?\))/);
          }
          expect(plan.some((line) => /webhook_outbox_account_due \(state=\? AND account_id=\? AND next_attempt_at<\?\)/.test(line)), plan.join('\n')).toBe(true);
        }
      } else {
        let visited = 0;
        for (const { sql, params } of seen) {
          const [{ 'QUERY PLAN': doc }] = (await store.driver.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params)) as Array<{ 'QUERY PLAN': unknown }>;
          visited += rowsReadFrom('webhook_outbox', (doc as Array<{ Plan: PlanNode }>)[0]!.Plan);
        }
        // A handful per account (the walk over accounts, each one's oldest row, its first six), not 50,000.
        expect(visited).toBeLessThan(200);
      }
    });
  });
}
