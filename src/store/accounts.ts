import { randomUUID } from 'node:crypto';
import { errors } from '../core/errors.js';
import { formatMicros, MAX_MICROS, type Micros } from '../core/money.js';
import { constraintKind, type SqlDriver, type SqlValue } from './driver.js';
import { insertEntry } from './ledger.js';
import { assertMicros, int, json, toAccount } from './rows.js';
import type { Account, RateLimits, Store } from './types.js';

export type AccountOps = Pick<
  Store,
  'createAccount' | 'getAccount' | 'getAccountByName' | 'listAccounts' | 'updateAccount' | 'topUp'
>;

export interface NewAccount {
  /** Random UUID when absent. */
  id?: string;
  name: string;
  balance: Micros;
  upstreams: string[] | null;
  limits: RateLimits;
  now: number;
}

export function accountOps(db: SqlDriver): AccountOps {
  const getAccount = async (id: string): Promise<Account | undefined> => {
    const rows = await db.query('SELECT * FROM accounts WHERE id = ?', [id]);
    return rows.length ? toAccount(rows[0]) : undefined;
  };

  return {
    getAccount,

    async createAccount(a: NewAccount): Promise<Account> {
      assertMicros('balance', a.balance);
      const id = a.id ?? randomUUID();
      try {
        return await db.transaction(async (tx) => {
          const rows = await tx.query(
            'INSERT INTO accounts (id, name, balance, upstreams, limits, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING *',
            [id, a.name, a.balance, json(a.upstreams), json(a.limits ?? {}), a.now],
          );
          // The opening balance goes through the ledger too, so balance == sum(deltas) from day one.
          if (a.balance > 0) {
            await insertEntry(tx, db.dialect, { accountId: id, kind: 'credit', delta: a.balance, ref: `open:${id}`, note: 'opening balance', now: a.now });
          }
          return toAccount(rows[0]);
        });
      } catch (e) {
        if (constraintKind(e) === 'unique') {
          throw errors.invalidRequest(`An account named '${a.name}' (or with that id) already exists.`, 'name', 'already_exists');
        }
        throw e;
      }
    },

    async getAccountByName(name) {
      const rows = await db.query('SELECT * FROM accounts WHERE name = ?', [name]);
      return rows.length ? toAccount(rows[0]) : undefined;
    },

    async listAccounts() {
      return (await db.query('SELECT * FROM accounts ORDER BY created_at, id')).map(toAccount);
    },

    async updateAccount(id, patch) {
      const sets: string[] = [];
      const params: SqlValue[] = [];
      if (patch.upstreams !== undefined) {
        sets.push('upstreams = ?');
        params.push(json(patch.upstreams));
      }
      if (patch.limits !== undefined) {
        sets.push('limits = ?');
        params.push(json(patch.limits));
      }
      if (sets.length === 0) return getAccount(id);
      const rows = await db.query(`UPDATE accounts SET ${sets.join(', ')} WHERE id = ? RETURNING *`, [...params, id]);
      return rows.length ? toAccount(rows[0]) : undefined;
    },

    async topUp(accountId, amount, note, now) {
      assertMicros('amount', amount, 1);
      return db.transaction(async (tx) => {
        const rows = await tx.query('UPDATE accounts SET balance = balance + ? WHERE id = ? RETURNING *', [amount, accountId]);
        if (rows.length === 0) throw errors.notFound(`Account '${accountId}' does not exist.`, 'account_not_found');
        // What video jobs still running hold comes back to the balance if they fail: with it the
        // balance must stay within what the ledger can hold, or that release would leave a balance
        // no read can take (every request of the account a 500). Read after the UPDATE has the
        // account's row, so a hold taken concurrently is either in both figures or in neither.
        const held = await tx.query(`SELECT COALESCE(SUM(hold_micros), 0) AS held FROM jobs WHERE account_id = ? AND state IN ('submitting', 'processing')`, [
          accountId,
        ]);
        const heldMicros = int(held[0]!.held);
        if (BigInt(String(rows[0]!.balance)) + BigInt(heldMicros) > BigInt(MAX_MICROS)) {
          throw errors.invalidRequest(
            `'amount' would take the balance past ${formatMicros(MAX_MICROS)}, the most an account can hold, once the ` +
              `${formatMicros(heldMicros)} held by its video jobs still running comes back to it.`,
            'amount',
          );
        }
        // Top-ups have no natural idempotency key in this interface, so each gets a fresh ref.
        await insertEntry(tx, db.dialect, { accountId, kind: 'credit', delta: amount, ref: `credit:${randomUUID()}`, note, now });
        return toAccount(rows[0]);
      });
    },
  };
}
