import type { Micros } from '../core/money.js';
import type { SqlDriver, SqlExecutor } from './driver.js';
import { assertMicros, int, intOrNull } from './rows.js';
import type { BudgetPeriod, KeyBudget, Store } from './types.js';

export type BudgetOps = Pick<Store, 'setKeyBudget' | 'reserveKeySpend' | 'adjustKeySpend' | 'keySpend'>;

/** Thrown inside a transaction to roll back a partly counted reservation (total passed, period did not). */
export class KeyBudgetExceeded extends Error {
  constructor() {
    super('key budget exceeded');
    this.name = 'KeyBudgetExceeded';
  }
}

export interface PeriodWindow {
  /** key_spend.period value, e.g. "day:2026-11-22" or "month:2026-11". */
  key: string;
  start: number;
  end: number;
}

/** The UTC calendar day or month that contains `at`. */
export function periodWindow(period: BudgetPeriod, at: number): PeriodWindow {
  const d = new Date(at);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  if (period === 'month') {
    const start = Date.UTC(y, m, 1);
    return { key: `month:${new Date(start).toISOString().slice(0, 7)}`, start, end: Date.UTC(y, m + 1, 1) };
  }
  const start = Date.UTC(y, m, d.getUTCDate());
  return { key: `day:${new Date(start).toISOString().slice(0, 10)}`, start, end: start + 86_400_000 };
}

const TOTAL = 'total';

async function budgetOf(tx: SqlExecutor, keyId: string): Promise<KeyBudget | null> {
  const rows = await tx.query('SELECT budget_total, budget_period, budget_period_limit FROM api_keys WHERE id = ?', [keyId]);
  if (rows.length === 0) return null;
  const total = intOrNull(rows[0]!.budget_total);
  const periodLimit = intOrNull(rows[0]!.budget_period_limit);
  const period = rows[0]!.budget_period === null || rows[0]!.budget_period === undefined ? null : (String(rows[0]!.budget_period) as BudgetPeriod);
  if (total === null && (period === null || periodLimit === null)) return null;
  return { total, period, periodLimit };
}

/** The (row, cap) pairs a reservation at `at` must fit in. */
function windowsOf(b: KeyBudget, at: number): Array<{ key: string; cap: Micros; start: number }> {
  const out: Array<{ key: string; cap: Micros; start: number }> = [];
  if (b.total !== null) out.push({ key: TOTAL, cap: b.total, start: 0 });
  if (b.period && b.periodLimit !== null) {
    const w = periodWindow(b.period, at);
    out.push({ key: w.key, cap: b.periodLimit, start: w.start });
  }
  return out;
}

/** Whether two budgets count the same windows (the total, and a period of the same kind), so that counters kept for one serve the other. */
function sameWindows(a: KeyBudget | null, b: KeyBudget | null): boolean {
  if (!a || !b) return false;
  const periodOf = (x: KeyBudget) => (x.period && x.periodLimit !== null ? x.period : null);
  return (a.total !== null) === (b.total !== null) && periodOf(a) === periodOf(b);
}

/** Captures and charges of the key since `since`, plus holds of its jobs still open (what a budget row starts from). */
async function spentSince(tx: SqlExecutor, keyId: string, since: number, until = Number.MAX_SAFE_INTEGER): Promise<Micros> {
  const settled = await tx.query(
    `SELECT COALESCE(SUM(0 - delta), 0) AS spent FROM ledger WHERE key_id = ? AND kind IN ('capture', 'charge') AND created_at >= ? AND created_at < ?`,
    [keyId, since, until],
  );
  const open = await tx.query(
    `SELECT COALESCE(SUM(hold_micros), 0) AS held FROM jobs WHERE key_id = ? AND state IN ('submitting', 'processing') AND created_at >= ? AND created_at < ?`,
    [keyId, since, until],
  );
  return int(settled[0]!.spent) + int(open[0]!.held);
}

/**
 * Counts `amount` against every window of the key's budget, inside the caller's transaction.
 * Each window is one conditional UPDATE (spent + amount <= cap): concurrent reservations on one
 * key serialise on the row and each re-checks what the previous one left, on SQLite and
 * PostgreSQL alike, exactly like the account balance. Throws KeyBudgetExceeded (so the caller's
 * transaction rolls back) when a window would overflow.
 */
export async function reserveInTx(tx: SqlExecutor, keyId: string, amount: Micros, at: number): Promise<void> {
  const budget = await budgetOf(tx, keyId);
  if (!budget) return;
  for (const w of windowsOf(budget, at)) {
    await seed(tx, keyId, w.key, w.start, w.key === TOTAL ? Number.MAX_SAFE_INTEGER : periodWindow(budget.period!, at).end);
    const moved = await tx.run('UPDATE key_spend SET spent = spent + ? WHERE key_id = ? AND period = ? AND spent + ? <= ?', [
      amount,
      keyId,
      w.key,
      amount,
      w.cap,
    ]);
    if (moved === 0) throw new KeyBudgetExceeded();
  }
}

/** Creates a window's row on first use from what the ledger already knows, so a budget set late still counts past spend. */
async function seed(tx: SqlExecutor, keyId: string, period: string, start: number, end: number): Promise<void> {
  const exists = await tx.query('SELECT 1 AS found FROM key_spend WHERE key_id = ? AND period = ?', [keyId, period]);
  if (exists.length > 0) return;
  const spent = await spentSince(tx, keyId, start, end);
  await tx.run('INSERT INTO key_spend (key_id, period, spent) VALUES (?, ?, ?) ON CONFLICT (key_id, period) DO NOTHING', [keyId, period, spent]);
}

/** Moves the key's windows that exist for a reservation made at `at` by `delta` (never below zero). */
export async function adjustInTx(tx: SqlExecutor, keyId: string, delta: Micros, at: number): Promise<void> {
  if (delta === 0) return;
  const periods = [TOTAL, periodWindow('day', at).key, periodWindow('month', at).key];
  await tx.run(
    `UPDATE key_spend SET spent = CASE WHEN spent + ? < 0 THEN 0 ELSE spent + ? END WHERE key_id = ? AND period IN (?, ?, ?)`,
    [delta, delta, keyId, ...periods],
  );
}

export function budgetOps(db: SqlDriver): BudgetOps {
  return {
    async setKeyBudget(id, budget) {
      if (budget) {
        if (budget.total !== null) assertMicros('budget.total', budget.total);
        if (budget.periodLimit !== null) assertMicros('budget.period_limit', budget.periodLimit);
      }
      return db.transaction(async (tx) => {
        const before = await budgetOf(tx, id);
        const changed = await tx.run('UPDATE api_keys SET budget_total = ?, budget_period = ?, budget_period_limit = ? WHERE id = ?', [
          budget?.total ?? null,
          budget?.period ?? null,
          budget?.periodLimit ?? null,
          id,
        ]);
        // A new cap over the windows the old budget already counted keeps their counters: they hold
        // the estimates of requests in flight, which the ledger does not (yet), and a restart from
        // the ledger would let those requests' spend go uncounted. Otherwise the counters restart
        // from the ledger the next time they are needed: while a key had no budget, or a window was
        // not part of it, nothing kept them up to date.
        if (!sameWindows(before, budget)) await tx.run('DELETE FROM key_spend WHERE key_id = ?', [id]);
        return changed === 1;
      });
    },

    async reserveKeySpend(keyId, amount, at) {
      assertMicros('amount', amount);
      try {
        await db.transaction((tx) => reserveInTx(tx, keyId, amount, at));
        return 'ok';
      } catch (e) {
        if (e instanceof KeyBudgetExceeded) return 'exceeded';
        throw e;
      }
    },

    async adjustKeySpend(keyId, delta, at) {
      if (delta === 0) return;
      await db.transaction((tx) => adjustInTx(tx, keyId, delta, at));
    },

    async keySpend(keyId, now) {
      return db.transaction(async (tx) => {
        const budget = await budgetOf(tx, keyId);
        const w = budget?.period ? periodWindow(budget.period, now) : null;
        const read = async (period: string, start: number, end: number) => {
          const rows = await tx.query('SELECT spent FROM key_spend WHERE key_id = ? AND period = ?', [keyId, period]);
          return rows.length ? int(rows[0]!.spent) : spentSince(tx, keyId, start, end);
        };
        return {
          total: await read(TOTAL, 0, Number.MAX_SAFE_INTEGER),
          period: w ? await read(w.key, w.start, w.end) : 0,
          periodStart: w?.start ?? null,
          periodEnd: w?.end ?? null,
        };
      });
    },
  };
}
