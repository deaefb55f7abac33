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

interface Window {
  key: string;
  start: number;
  end: number;
  /** The budget's cap on it; null for a window counted but not capped. */
  cap: Micros | null;
}

/**
 * Every window a reservation at `at` is counted in: the lifetime total, its UTC day and its UTC
 * month, whichever of them the budget caps. The ones it does not cap are counted too, so that a
 * budget changed to another kind (a daily limit made monthly, a period made a total) finds counters
 * that already hold the estimates of the requests running: restarted from the ledger, they would
 * miss those requests, whose charges are not written yet, and the corrections of their estimates
 * (`adjustInTx`) would then take them off counters that never had them.
 */
function windowsOf(b: KeyBudget, at: number): Window[] {
  const day = periodWindow('day', at);
  const month = periodWindow('month', at);
  const periodCap = (p: BudgetPeriod): Micros | null => (b.period === p && b.periodLimit !== null ? b.periodLimit : null);
  return [
    { key: TOTAL, start: 0, end: Number.MAX_SAFE_INTEGER, cap: b.total },
    { ...day, cap: periodCap('day') },
    { ...month, cap: periodCap('month') },
  ];
}

/**
 * What a window's counter starts from: the key's charges made in [since, until), plus what its
 * video jobs created in that window cost (their captures) or still hold (jobs running). A job
 * belongs to the window it was created in, wherever its capture's ledger row falls in time: its
 * hold was counted there and its settlement corrects that same window (`adjustInTx` at the job's
 * creation time), so a video created at 23:59 and finished after midnight counts in the first day
 * only. A charge (embeddings, chat) falls in the window of its ledger row.
 */
async function spentSince(tx: SqlExecutor, keyId: string, since: number, until = Number.MAX_SAFE_INTEGER): Promise<Micros> {
  const charged = await tx.query(
    `SELECT COALESCE(SUM(0 - delta), 0) AS spent FROM ledger WHERE key_id = ? AND kind = 'charge' AND created_at >= ? AND created_at < ?`,
    [keyId, since, until],
  );
  // One pass over the window's jobs: a settled job has its capture (ref = the job's id, found by
  // the unique (ref, kind) index), a running one its hold; failed and rejected jobs have neither.
  const jobs = await tx.query(
    `SELECT COALESCE(SUM(CASE WHEN j.state IN ('submitting', 'processing') THEN j.hold_micros ELSE 0 END), 0) AS held,
            COALESCE(SUM(0 - l.delta), 0) AS captured
     FROM jobs j LEFT JOIN ledger l ON l.ref = j.id AND l.kind = 'capture'
     WHERE j.key_id = ? AND j.created_at >= ? AND j.created_at < ?`,
    [keyId, since, until],
  );
  return int(charged[0]!.spent) + int(jobs[0]!.held) + int(jobs[0]!.captured);
}

/**
 * What `spentSince` gives for the whole of time, read off the ledger's running total (rollups.ts)
 * instead of summed over every row of the key: its captures and charges, and the holds of its jobs
 * still running (a settled job's hold and release cancel out).
 */
async function spentEver(tx: SqlExecutor, keyId: string): Promise<Micros> {
  const rows = await tx.query('SELECT spent FROM key_totals WHERE key_id = ?', [keyId]);
  return rows.length ? int(rows[0]!.spent) : 0;
}

/** A window's spend from the ledger and the jobs; the lifetime one from its running total. */
function spentIn(tx: SqlExecutor, keyId: string, w: { key: string; start: number; end: number }): Promise<Micros> {
  return w.key === TOTAL ? spentEver(tx, keyId) : spentSince(tx, keyId, w.start, w.end);
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
  const windows = windowsOf(budget, at);
  await seed(tx, keyId, windows);
  const uncapped: string[] = [];
  for (const w of windows) {
    if (w.cap === null) {
      uncapped.push(w.key);
      continue;
    }
    const moved = await tx.run('UPDATE key_spend SET spent = spent + ? WHERE key_id = ? AND period = ? AND spent + ? <= ?', [
      amount,
      keyId,
      w.key,
      amount,
      w.cap,
    ]);
    if (moved === 0) throw new KeyBudgetExceeded();
  }
  if (uncapped.length > 0)
    await tx.run(`UPDATE key_spend SET spent = spent + ? WHERE key_id = ? AND period IN (${uncapped.map(() => '?').join(', ')})`, [amount, keyId, ...uncapped]);
}

/** Creates the windows' rows on first use from what the ledger already knows, so a budget set late still counts past spend. */
async function seed(tx: SqlExecutor, keyId: string, windows: Window[]): Promise<void> {
  const rows = await tx.query(`SELECT period FROM key_spend WHERE key_id = ? AND period IN (${windows.map(() => '?').join(', ')})`, [
    keyId,
    ...windows.map((w) => w.key),
  ]);
  const present = new Set(rows.map((r) => String(r.period)));
  for (const w of windows) {
    if (present.has(w.key)) continue;
    const spent = await spentIn(tx, keyId, w);
    await tx.run('INSERT INTO key_spend (key_id, period, spent) VALUES (?, ?, ?) ON CONFLICT (key_id, period) DO NOTHING', [keyId, w.key, spent]);
  }
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
        // A budget changed to another (a new cap, another period, a total added or removed) keeps the
        // counters: every window was counted whatever the budget capped (windowsOf), and they hold the
        // estimates of requests in flight, which the ledger does not (yet). While a key has no budget
        // nothing keeps them up to date, so a budget removed or set where there was none restarts them
        // from the ledger the next time they are needed (what that misses: docs/spend.md).
        if (!before || !budget) await tx.run('DELETE FROM key_spend WHERE key_id = ?', [id]);
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
        // A budget's counters when they exist (they also hold the estimates of requests running);
        // else what the ledger says, the lifetime figure in one row whatever the key's history.
        const read = async (window: { key: string; start: number; end: number }) => {
          const rows = await tx.query('SELECT spent FROM key_spend WHERE key_id = ? AND period = ?', [keyId, window.key]);
          return rows.length ? int(rows[0]!.spent) : spentIn(tx, keyId, window);
        };
        return {
          total: await read({ key: TOTAL, start: 0, end: Number.MAX_SAFE_INTEGER }),
          period: w ? await read(w) : 0,
          periodStart: w?.start ?? null,
          periodEnd: w?.end ?? null,
        };
      });
    },
  };
}
