import type { Micros } from '../core/money.js';
import type { Dialect, SqlExecutor } from './driver.js';
import { int } from './rows.js';
import type { LedgerKind } from './types.js';

/**
 * Running totals of the ledger, so that a key's spend and the usage reports read a handful of rows
 * instead of every ledger row in their range (a key with 200,000 rows cost ~160 ms of CPU per
 * GET /v1/usage on SQLite, all of it the event loop's; docs/spend.md, "What a usage read costs").
 *
 *  - `key_totals`: per key, minus the sum of the deltas of its ledger rows. Holds, releases,
 *    captures and charges carry the key, so this is what its captures and charges took plus what
 *    its running jobs hold (a settled job's hold and release cancel out): the `usage` of
 *    GET /v1/usage for a key without a budget. Credits carry no key.
 *  - `usage_daily`: captures and charges per key, UTC day, model and account, with their count:
 *    the usage reports' whole days. '' stands for a row without a key or model (rows written
 *    before the ledger recorded them), which the reports show as '' too.
 *
 * Both move in the transaction of each ledger insert, and only for rows really inserted (an ON
 * CONFLICT (ref, kind) DO NOTHING that inserts nothing counts nothing), so they are exactly the sums
 * over the ledger, which is append-only:
 *  - PostgreSQL: a trigger, so every writer keeps them, an instance of the previous version during a
 *    rolling upgrade included.
 *  - SQLite: the ledger's writes in ledger.ts call `addToTotals`. A trigger there makes every ledger
 *    INSERT keep a statement journal (a copy of each page it touches, in case the trigger fails half
 *    way): measured +5 us per charge (batches of 16 or 500) with that journal in memory, +19 us
 *    (batches of 500) with it in a temporary file, SQLite's default; this way costs ~1 us. A SQLite
 *    database has one gateway instance (several need PostgreSQL: README, "Running several
 *    instances"), so every row comes through that code.
 */
export function rollupSchema(dialect: Dialect): string {
  return `
CREATE TABLE key_totals (
  key_id TEXT PRIMARY KEY,
  spent BIGINT NOT NULL
);
CREATE TABLE usage_daily (
  key_id TEXT NOT NULL,
  day BIGINT NOT NULL,
  model TEXT NOT NULL,
  account_id TEXT NOT NULL,
  spent BIGINT NOT NULL,
  requests BIGINT NOT NULL,
  PRIMARY KEY (key_id, day, model, account_id)
);
CREATE INDEX usage_daily_account ON usage_daily (account_id, day);
CREATE INDEX usage_daily_day ON usage_daily (day);
${dialect === 'postgres' ? PG_TRIGGER : ''}
CREATE TABLE ledger_rollup_backfill (upto BIGINT NOT NULL);
INSERT INTO ledger_rollup_backfill (upto) SELECT COALESCE(MAX(id), 0) FROM ledger;
`;
}

/*
 * The last statement above records which rows are not counted yet: those that exist now. On SQLite
 * the migration's BEGIN IMMEDIATE keeps every writer out until it commits. On PostgreSQL CREATE
 * TRIGGER locks the ledger against inserts until the migration commits, after waiting for every
 * transaction that had inserted to end; so the rows up to MAX(id) read after it are all committed,
 * and any row with a higher id is inserted once the trigger is there (an INSERT takes its lock
 * before its id is drawn). `backfillStep` counts the rows up to that id.
 */

/**
 * PostgreSQL: once per statement over the rows it inserted (a transition table), so a charge batch
 * makes one upsert per key and day rather than one per row. It fires at the end of the statement,
 * after a charge's balance UPDATE; a settlement moves the balance before it inserts its rows (as a
 * hold does), so transactions lock the account first and the total rows after it, in key order:
 * concurrent writers cannot wait for each other in a cycle. The search_path is pinned to the schema
 * the gateway migrated, whoever inserts. EXECUTE PROCEDURE is the spelling PostgreSQL 10 knows too.
 */
const PG_TRIGGER = `
CREATE FUNCTION ledger_rollups() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO key_totals AS t (key_id, spent)
    SELECT key_id, SUM(0 - delta) FROM added WHERE key_id IS NOT NULL GROUP BY key_id ORDER BY key_id
    ON CONFLICT (key_id) DO UPDATE SET spent = t.spent + EXCLUDED.spent;
  INSERT INTO usage_daily AS u (key_id, day, model, account_id, spent, requests)
    SELECT COALESCE(key_id, ''), created_at / 86400000, COALESCE(model, ''), account_id, SUM(0 - delta), COUNT(*)
      FROM added WHERE kind IN ('capture', 'charge') GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (key_id, day, model, account_id) DO UPDATE SET spent = u.spent + EXCLUDED.spent, requests = u.requests + EXCLUDED.requests;
  RETURN NULL;
END $$;
CREATE TRIGGER ledger_rollups AFTER INSERT ON ledger REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE PROCEDURE ledger_rollups();
`;

/** A ledger row as the totals count it. */
export interface CountedRow {
  accountId: string;
  kind: LedgerKind;
  delta: Micros;
  createdAt: number;
  keyId: string | null;
  model: string | null;
}

const ADD_TOTAL = 'INSERT INTO key_totals (key_id, spent) VALUES (?, ?) ON CONFLICT (key_id) DO UPDATE SET spent = spent + excluded.spent';
const ADD_DAILY = `INSERT INTO usage_daily (key_id, day, model, account_id, spent, requests) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (key_id, day, model, account_id) DO UPDATE SET spent = spent + excluded.spent, requests = requests + excluded.requests`;

/**
 * SQLite: adds ledger rows just inserted in `tx` to the totals, one upsert per key and one per key,
 * day and model however many rows (a charge batch is mostly one key). Does nothing on PostgreSQL,
 * where the trigger has done it.
 */
export async function addToTotals(tx: SqlExecutor, dialect: Dialect, rows: readonly CountedRow[]): Promise<void> {
  if (dialect === 'postgres' || rows.length === 0) return;
  const totals = new Map<string, Micros>();
  const daily = new Map<string, { cells: [string, number, string, string]; spent: Micros; requests: number }>();
  for (const r of rows) {
    if (r.keyId !== null) totals.set(r.keyId, (totals.get(r.keyId) ?? 0) - r.delta);
    if (r.kind !== 'capture' && r.kind !== 'charge') continue;
    // Truncated as SQL's integer division truncates (created_at / 86400000 in the reports).
    const cells: [string, number, string, string] = [r.keyId ?? '', Math.trunc(r.createdAt / DAY_MS), r.model ?? '', r.accountId];
    const id = JSON.stringify(cells);
    const d = daily.get(id) ?? { cells, spent: 0, requests: 0 };
    d.spent -= r.delta;
    d.requests += 1;
    daily.set(id, d);
  }
  for (const [keyId, spent] of totals) await tx.run(ADD_TOTAL, [keyId, spent]);
  for (const d of daily.values()) await tx.run(ADD_DAILY, [...d.cells, d.spent, d.requests]);
}

const DAY_MS = 86_400_000;

/**
 * Ledger rows counted per backfill step: each step is one short transaction on PostgreSQL, during
 * which ledger writes wait for the totals (~40 ms a step measured, 300,000 rows in 15 steps).
 */
export const BACKFILL_ROWS = 20_000;

const BACKFILL_TOTALS = `INSERT INTO key_totals (key_id, spent)
SELECT key_id, SUM(0 - delta) FROM ledger WHERE id > ? AND id <= ? AND key_id IS NOT NULL GROUP BY key_id ORDER BY key_id
ON CONFLICT (key_id) DO UPDATE SET spent = key_totals.spent + excluded.spent`;

const BACKFILL_DAILY = `INSERT INTO usage_daily (key_id, day, model, account_id, spent, requests)
SELECT COALESCE(key_id, ''), created_at / 86400000, COALESCE(model, ''), account_id, SUM(0 - delta), COUNT(*)
FROM ledger WHERE id > ? AND id <= ? AND kind IN ('capture', 'charge') GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
ON CONFLICT (key_id, day, model, account_id) DO UPDATE SET spent = usage_daily.spent + excluded.spent, requests = usage_daily.requests + excluded.requests`;

/**
 * Adds the next `rows` ledger rows not counted yet (newest first, by id) to the totals, and
 * returns true once none is left (the bookkeeping table is then dropped). On PostgreSQL the totals
 * are locked against the trigger for the step: without it a step and a charge batch could each hold
 * a total row the other waits for. The ledger itself stays open to writes.
 */
export async function backfillStep(tx: SqlExecutor, dialect: Dialect, rows = BACKFILL_ROWS): Promise<boolean> {
  if (dialect === 'postgres') await tx.exec('LOCK TABLE key_totals, usage_daily IN SHARE ROW EXCLUSIVE MODE');
  const upto = int((await tx.query('SELECT upto FROM ledger_rollup_backfill'))[0]!.upto);
  if (upto <= 0) {
    await tx.exec('DROP TABLE ledger_rollup_backfill');
    return true;
  }
  const from = Math.max(0, upto - rows);
  await tx.run(BACKFILL_TOTALS, [from, upto]);
  await tx.run(BACKFILL_DAILY, [from, upto]);
  await tx.run('UPDATE ledger_rollup_backfill SET upto = ?', [from]);
  return false;
}
