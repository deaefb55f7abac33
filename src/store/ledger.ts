import { errors, GatewayError } from '../core/errors.js';
import { isMicros, type Micros } from '../core/money.js';
import { constraintKind, type Dialect, type SqlDriver, type SqlExecutor } from './driver.js';
import type { SqlValue } from './driver.js';
import { addToTotals } from './rollups.js';
import { assertMicros, int, toEntry } from './rows.js';
import type { Attribution, LedgerKind, Store } from './types.js';

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
  by?: Attribution;
}

/**
 * Appends one entry, and counts it in the ledger's running totals (rollups.ts). Throws a unique
 * violation when (ref, kind) already exists, which rolls the surrounding transaction back: that is
 * the at-most-once guarantee, even across processes.
 */
export async function insertEntry(tx: SqlExecutor, dialect: Dialect, e: EntryInput): Promise<void> {
  await tx.run(
    'INSERT INTO ledger (account_id, kind, delta, ref, note, created_at, key_id, model, upstream) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    [e.accountId, e.kind, e.delta, e.ref, e.note, e.now, e.by?.keyId ?? null, e.by?.model ?? null, e.by?.upstream ?? null],
  );
  await addToTotals(tx, dialect, [counted(e.accountId, e.kind, e.delta, e.now, e.by)]);
}

function counted(accountId: string, kind: LedgerKind, delta: Micros, createdAt: number, by: Attribution | undefined) {
  return { accountId, kind, delta, createdAt, keyId: by?.keyId ?? null, model: by?.model ?? null };
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
  INSERT INTO ledger (account_id, kind, delta, ref, note, created_at, key_id, model, upstream) VALUES (?, 'charge', ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (ref, kind) DO NOTHING
  RETURNING account_id, delta
)
UPDATE accounts SET balance = accounts.balance + entry.delta FROM entry WHERE accounts.id = entry.account_id`;

/**
 * PostgreSQL, a whole batch in one statement (one round trip, no BEGIN/COMMIT, atomic on its
 * own): the charges arrive as one JSON array, the ledger takes those whose (ref, kind) is new,
 * and each account's balance moves once by the sum of its new entries. Returns the refs written.
 */
const PG_CHARGE_MANY = `WITH input AS (
  SELECT * FROM json_to_recordset(?::json)
    AS x(account_id text, delta bigint, ref text, note text, created_at bigint, key_id text, model text, upstream text)
), entry AS (
  INSERT INTO ledger (account_id, kind, delta, ref, note, created_at, key_id, model, upstream)
  SELECT account_id, 'charge', delta, ref, note, created_at, key_id, model, upstream FROM input
  ON CONFLICT (ref, kind) DO NOTHING
  RETURNING account_id, delta, ref
), moved AS (
  UPDATE accounts SET balance = accounts.balance + t.total
  FROM (SELECT account_id, SUM(delta) AS total FROM entry GROUP BY account_id) t
  WHERE accounts.id = t.account_id
)
SELECT ref FROM entry`;

const CHARGE_ENTRY = `INSERT INTO ledger (account_id, kind, delta, ref, note, created_at, key_id, model, upstream) VALUES (?, 'charge', ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (ref, kind) DO NOTHING`;

export function ledgerOps(db: SqlDriver): LedgerOps {
  return {
    async listLedger(accountId, opts = {}) {
      const limit = clampLimit(opts.limit, DEFAULT_LEDGER_LIMIT);
      const where = ['account_id = ?'];
      const params: SqlValue[] = [accountId];
      if (opts.ref !== undefined) (where.push('ref = ?'), params.push(opts.ref));
      if (opts.kind !== undefined) (where.push('kind = ?'), params.push(opts.kind));
      if (opts.model !== undefined) (where.push('model = ?'), params.push(opts.model));
      if (opts.from !== undefined) (where.push('created_at >= ?'), params.push(opts.from));
      if (opts.to !== undefined) (where.push('created_at < ?'), params.push(opts.to));
      if (opts.before !== undefined) (where.push('id < ?'), params.push(opts.before));
      const rows = await db.query(`SELECT * FROM ledger WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT ?`, [...params, limit]);
      return rows.map(toEntry);
    },

    async charge(accountId, amount, ref, note, now, by) {
      assertMicros('amount', amount);
      const params = [accountId, 0 - amount, ref, note, now, ...attribution(by)];
      try {
        if (db.dialect === 'postgres') {
          return (await db.run(PG_CHARGE, params)) === 1 ? 'ok' : 'duplicate';
        }
        return await db.transaction(async (tx) => {
          if ((await tx.run(CHARGE_ENTRY, params)) === 0) return 'duplicate';
          await tx.run('UPDATE accounts SET balance = balance - ? WHERE id = ?', [amount, accountId]);
          await addToTotals(tx, 'sqlite', [counted(accountId, 'charge', 0 - amount, now, by)]);
          return 'ok';
        });
      } catch (e) {
        if (constraintKind(e) === 'foreign_key') throw errors.notFound(`Account '${accountId}' does not exist.`, 'account_not_found');
        throw e;
      }
    },

    async chargeMany(items) {
      // An amount the ledger cannot take is refused in its own slot (`charge` throws it below), so it
      // never sinks the charges it shares a write with.
      if (items.some((it) => !isMicros(it.amount))) return chargeEach(this, items);
      try {
        if (db.dialect === 'postgres') return await pgChargeMany(db, items);
        // SQLite: one transaction; each account's balance moves once, by the sum of its new entries,
        // and the running totals once per key (and per key, day and model).
        return await db.transaction(async (tx) => {
          const out: ('ok' | 'duplicate')[] = [];
          const totals = new Map<string, Micros>();
          const written: ReturnType<typeof counted>[] = [];
          for (const it of items) {
            const params = [it.accountId, 0 - it.amount, it.ref, it.note, it.now, ...attribution(it.by)];
            if ((await tx.run(CHARGE_ENTRY, params)) === 0) out.push('duplicate');
            else {
              totals.set(it.accountId, (totals.get(it.accountId) ?? 0) + it.amount);
              written.push(counted(it.accountId, 'charge', 0 - it.amount, it.now, it.by));
              out.push('ok');
            }
          }
          for (const [accountId, total] of totals) await tx.run('UPDATE accounts SET balance = balance - ? WHERE id = ?', [total, accountId]);
          await addToTotals(tx, 'sqlite', written);
          return out;
        });
      } catch (e) {
        // One bad item (e.g. an account deleted meanwhile) must not sink the others: retry one by one.
        if (items.length === 1) throw e;
        return chargeEach(this, items);
      }
    },

    async canAfford(accountId, amount) {
      const rows = await db.query('SELECT balance FROM accounts WHERE id = ?', [accountId]);
      return rows.length > 0 && int(rows[0].balance) >= amount;
    },
  };
}

type ChargeItem = Parameters<Store['chargeMany']>[0][number];

/**
 * One statement for the whole batch. A ref named twice in the batch is written once: its first
 * occurrence is 'ok', the others 'duplicate', as if they had been charged one after the other.
 */
async function pgChargeMany(db: SqlDriver, items: readonly ChargeItem[]): Promise<('ok' | 'duplicate')[]> {
  const rows = items.map((it) => ({
    account_id: it.accountId,
    delta: 0 - it.amount,
    ref: it.ref,
    note: it.note,
    created_at: it.now,
    key_id: it.by?.keyId ?? null,
    model: it.by?.model ?? null,
    upstream: it.by?.upstream ?? null,
  }));
  const written = new Set((await db.query(PG_CHARGE_MANY, [JSON.stringify(rows)])).map((r) => String(r.ref)));
  return items.map((it) => (written.delete(it.ref) ? 'ok' : 'duplicate'));
}

/**
 * Each item on its own, after a batch failed or held an invalid amount. A refusal of the item itself
 * (a GatewayError: its account is gone, its amount is invalid) stays in its slot. Any other error is
 * the database failing, not the item: the items not yet tried get that same error without another
 * round trip each, and the caller (billing/charges.ts) tries them again later.
 */
async function chargeEach(ops: Pick<LedgerOps, 'charge'>, items: readonly ChargeItem[]): Promise<('ok' | 'duplicate' | Error)[]> {
  const out: ('ok' | 'duplicate' | Error)[] = [];
  let down: Error | undefined;
  for (const it of items) {
    if (down) {
      out.push(down);
      continue;
    }
    try {
      out.push(await ops.charge(it.accountId, it.amount, it.ref, it.note, it.now, it.by));
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      if (!(e instanceof GatewayError)) down = e;
      out.push(e);
    }
  }
  return out;
}

function attribution(by: Attribution | undefined): (string | null)[] {
  return [by?.keyId ?? null, by?.model ?? null, by?.upstream ?? null];
}
