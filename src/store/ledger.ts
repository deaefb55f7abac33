import { errors } from '../core/errors.js';
import type { Micros } from '../core/money.js';
import { constraintKind, type SqlDriver, type SqlExecutor } from './driver.js';
import { assertMicros, int, toEntry } from './rows.js';
import type { LedgerKind, Store } from './types.js';

export type LedgerOps = Pick<Store, 'listLedger' | 'charge' | 'chargeMany' | 'canAfford'>;

export const DEFAULT_LEDGER_LIMIT = 100;
export const MAX_LIST_LIMIT = 10_000;

export interface EntryInput {
  accountId: string;
  kind: LedgerKind;
  delta: Micros;
  ref: string;
  note: string | null;
  now: number;
}

/**
 * Appends one entry. Throws a unique violation when (ref, kind) already exists, which rolls the
 * surrounding transaction back: that is the at-most-once guarantee, even across processes.
 */
export async function insertEntry(tx: SqlExecutor, e: EntryInput): Promise<void> {
  await tx.run('INSERT INTO ledger (account_id, kind, delta, ref, note, created_at) VALUES (?, ?, ?, ?, ?, ?)', [
    e.accountId,
    e.kind,
    e.delta,
    e.ref,
    e.note,
    e.now,
  ]);
}

export function clampLimit(limit: number | undefined, fallback: number): number {
  if (limit === undefined || !Number.isFinite(limit)) return fallback;
  return Math.min(MAX_LIST_LIMIT, Math.max(1, Math.floor(limit)));
}

/**
 * PostgreSQL: the entry and the balance move in one statement (one round trip, atomic on its
 * own). A conflicting ref inserts nothing, so the UPDATE finds no row and reports 0.
 */
const PG_CHARGE = `WITH entry AS (
  INSERT INTO ledger (account_id, kind, delta, ref, note, created_at) VALUES (?, 'charge', ?, ?, ?, ?)
  ON CONFLICT (ref, kind) DO NOTHING
  RETURNING account_id, delta
)
UPDATE accounts SET balance = accounts.balance + entry.delta FROM entry WHERE accounts.id = entry.account_id`;

const CHARGE_ENTRY = `INSERT INTO ledger (account_id, kind, delta, ref, note, created_at) VALUES (?, 'charge', ?, ?, ?, ?)
ON CONFLICT (ref, kind) DO NOTHING`;

export function ledgerOps(db: SqlDriver): LedgerOps {
  return {
    async listLedger(accountId, opts = {}) {
      const limit = clampLimit(opts.limit, DEFAULT_LEDGER_LIMIT);
      const rows =
        opts.ref !== undefined
          ? await db.query('SELECT * FROM ledger WHERE account_id = ? AND ref = ? ORDER BY id DESC LIMIT ?', [accountId, opts.ref, limit])
          : await db.query('SELECT * FROM ledger WHERE account_id = ? ORDER BY id DESC LIMIT ?', [accountId, limit]);
      return rows.map(toEntry);
    },

    async charge(accountId, amount, ref, note, now) {
      assertMicros('amount', amount);
      const params = [accountId, 0 - amount, ref, note, now];
      try {
        if (db.dialect === 'postgres') {
          return (await db.run(PG_CHARGE, params)) === 1 ? 'ok' : 'duplicate';
        }
        return await db.transaction(async (tx) => {
          if ((await tx.run(CHARGE_ENTRY, params)) === 0) return 'duplicate';
          await tx.run('UPDATE accounts SET balance = balance - ? WHERE id = ?', [amount, accountId]);
          return 'ok';
        });
      } catch (e) {
        if (constraintKind(e) === 'foreign_key') throw errors.notFound(`Account '${accountId}' does not exist.`, 'account_not_found');
        throw e;
      }
    },

    async chargeMany(items) {
      for (const it of items) assertMicros('amount', it.amount);
      try {
        return await db.transaction(async (tx) => {
          const out: ('ok' | 'duplicate')[] = [];
          for (const it of items) {
            const params = [it.accountId, 0 - it.amount, it.ref, it.note, it.now];
            if (db.dialect === 'postgres') {
              out.push((await tx.run(PG_CHARGE, params)) === 1 ? 'ok' : 'duplicate');
            } else if ((await tx.run(CHARGE_ENTRY, params)) === 0) out.push('duplicate');
            else {
              await tx.run('UPDATE accounts SET balance = balance - ? WHERE id = ?', [it.amount, it.accountId]);
              out.push('ok');
            }
          }
          return out;
        });
      } catch (e) {
        // One bad item (e.g. an account deleted meanwhile) must not sink the others: retry one by one.
        if (items.length === 1) throw e;
        const out: ('ok' | 'duplicate' | Error)[] = [];
        for (const it of items) {
          try {
            out.push(await this.charge(it.accountId, it.amount, it.ref, it.note, it.now));
          } catch (err) {
            out.push(err as Error);
          }
        }
        return out;
      }
    },

    async canAfford(accountId, amount) {
      const rows = await db.query('SELECT balance FROM accounts WHERE id = ?', [accountId]);
      return rows.length > 0 && int(rows[0].balance) >= amount;
    },
  };
}
