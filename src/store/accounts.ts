import { randomUUID } from 'node:crypto';
import { errors } from '../core/errors.js';
import type { Micros } from '../core/money.js';
import { constraintKind, type SqlDriver, type SqlValue } from './driver.js';
import { insertEntry } from './ledger.js';
import { assertMicros, json, toAccount } from './rows.js';
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
            await insertEntry(tx, { accountId: id, kind: 'credit', delta: a.balance, ref: `open:${id}`, note: 'opening balance', now: a.now });
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
        // Top-ups have no natural idempotency key in this interface, so each gets a fresh ref.
        await insertEntry(tx, { accountId, kind: 'credit', delta: amount, ref: `credit:${randomUUID()}`, note, now });
        return toAccount(rows[0]);
      });
    },
  };
}
