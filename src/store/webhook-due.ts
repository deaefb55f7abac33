import type { Dialect, SqlDriver } from './driver.js';
import type { DueDelivery } from './webhook-types.js';

/**
 * The dispatcher's claim query, written so that its cost follows the answer and the number of
 * accounts with pending rows, never the size of one account's backlog (a receiver down for a day
 * leaves one account with 100,000 due rows, and on SQLite this runs on the event loop every tick).
 * Every step walks the index webhook_outbox_account_due (state, account_id, next_attempt_at, id):
 *
 *  1. the accounts with a pending row, one index seek each (a loose index scan, written out
 *     because neither engine would skip from one account to the next on its own here);
 *  2. each one's oldest due row (one seek, then past the few rows under a live lease), and of
 *     those accounts the `limit` whose oldest due row is oldest: the accounts whose rows can open
 *     the page, and the ones that have waited longest, so no account is left out for good;
 *  3. each chosen account's first `perAccount` due rows, read off the index in order;
 *  4. those few rows in turns: every account's first before any account's second.
 *
 * This returns exactly what numbering every due row per account would, because a row is on the
 * page only if its account's first row is, and that first row ranks among the `limit` oldest
 * first rows.
 */

/** A due row nobody holds, of the account `owner` (an alias in the enclosing query). */
const dueOf = (alias: string, owner: string) =>
  `${alias}.state = 'pending' AND ${alias}.account_id = ${owner}.account_id AND ${alias}.next_attempt_at <= ?
   AND (${alias}.lease_until IS NULL OR ${alias}.lease_until <= ?)`;

/** Step 1; the NULL that ends the walk is dropped by the steps after it. */
const PENDING_ACCOUNTS = `pending_accounts(account_id) AS (
  SELECT (SELECT account_id FROM webhook_outbox WHERE state = 'pending' ORDER BY account_id LIMIT 1)
  UNION ALL
  SELECT (SELECT o.account_id FROM webhook_outbox o
           WHERE o.state = 'pending' AND o.account_id > p.account_id ORDER BY o.account_id LIMIT 1)
    FROM pending_accounts p WHERE p.account_id IS NOT NULL
)`;

/** The last step, over `picked` (id, account_id, url, next_attempt_at, turn). */
const IN_TURNS = `SELECT id, account_id, url FROM picked ORDER BY turn, next_attempt_at, id LIMIT ?`;

/**
 * SQLite has no LATERAL: an account's first due row is a correlated scalar subquery, and its
 * first rows an IN list that SQLite reads off the primary key one id at a time.
 */
const SQLITE = `WITH RECURSIVE ${PENDING_ACCOUNTS},
firsts AS (
  SELECT p.account_id,
         (SELECT f.id FROM webhook_outbox f WHERE ${dueOf('f', 'p')} ORDER BY f.next_attempt_at, f.id LIMIT 1) AS first_id
    FROM pending_accounts p WHERE p.account_id IS NOT NULL
),
chosen AS (
  SELECT s.account_id FROM firsts s JOIN webhook_outbox o ON o.id = s.first_id
   ORDER BY o.next_attempt_at, o.id LIMIT ?
),
picked AS (
  SELECT o.id, o.account_id, o.url, o.next_attempt_at,
         ROW_NUMBER() OVER (PARTITION BY o.account_id ORDER BY o.next_attempt_at, o.id) AS turn
    FROM chosen c JOIN webhook_outbox o
      ON o.id IN (SELECT d.id FROM webhook_outbox d WHERE ${dueOf('d', 'c')} ORDER BY d.next_attempt_at, d.id LIMIT ?)
)
${IN_TURNS}`;

/** PostgreSQL: the same steps with LATERAL joins, each an index scan that stops at its LIMIT. */
const POSTGRES = `WITH RECURSIVE ${PENDING_ACCOUNTS},
chosen AS (
  SELECT p.account_id FROM pending_accounts p
   CROSS JOIN LATERAL (
     SELECT f.next_attempt_at, f.id FROM webhook_outbox f WHERE ${dueOf('f', 'p')} ORDER BY f.next_attempt_at, f.id LIMIT 1
   ) s
   ORDER BY s.next_attempt_at, s.id LIMIT ?
),
picked AS (
  SELECT d.id, d.account_id, d.url, d.next_attempt_at,
         ROW_NUMBER() OVER (PARTITION BY d.account_id ORDER BY d.next_attempt_at, d.id) AS turn
    FROM chosen c
   CROSS JOIN LATERAL (
     SELECT d.id, d.account_id, d.url, d.next_attempt_at FROM webhook_outbox d
      WHERE ${dueOf('d', 'c')} ORDER BY d.next_attempt_at, d.id LIMIT ?
   ) d
)
${IN_TURNS}`;

export const DUE_DELIVERIES_SQL: Record<Dialect, string> = { sqlite: SQLITE, postgres: POSTGRES };

/** `limit` and `perAccount` are taken as given (at least 1); the caller clamps them. */
export async function dueDeliveryRows(db: SqlDriver, now: number, limit: number, perAccount: number): Promise<DueDelivery[]> {
  // The placeholders in text order: step 2's lease check and page size, step 3's, the page size.
  const rows = await db.query(DUE_DELIVERIES_SQL[db.dialect], [now, now, limit, now, now, perAccount, limit]);
  return rows.map((r) => ({ id: String(r.id), accountId: String(r.account_id), url: String(r.url) }));
}
