import { randomUUID } from 'node:crypto';
import { errors } from '../core/errors.js';
import { constraintKind, type SqlDriver, type SqlValue } from './driver.js';
import { clampLimit } from './ledger.js';
import { json, toKey } from './rows.js';
import type { Store } from './types.js';

export type KeyOps = Pick<Store, 'createKey' | 'findKeyByHash' | 'getKey' | 'listKeys' | 'keysByPrefix' | 'revokeKey' | 'touchKey'>;

export function keyOps(db: SqlDriver): KeyOps {
  return {
    async createKey(k) {
      const id = k.id || randomUUID();
      try {
        const rows = await db.query(
          `INSERT INTO api_keys (id, account_id, hash, prefix, name, models, actions, limits, expires_at, revoked_at, last_used_at, created_at,
             budget_total, budget_period, budget_period_limit)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?, ?) RETURNING *`,
          [
            id, k.accountId, k.hash, k.prefix, k.name, json(k.models), json(k.actions), json(k.limits ?? {}), k.expiresAt, k.createdAt,
            k.budget?.total ?? null, k.budget?.period ?? null, k.budget?.periodLimit ?? null,
          ],
        );
        return toKey(rows[0]);
      } catch (e) {
        const kind = constraintKind(e);
        if (kind === 'foreign_key') throw errors.notFound(`Account '${k.accountId}' does not exist.`, 'account_not_found');
        if (kind === 'unique') throw errors.invalidRequest('A key with this id or hash already exists.', 'id', 'already_exists');
        throw e;
      }
    },

    async findKeyByHash(hash) {
      const rows = await db.query('SELECT * FROM api_keys WHERE hash = ?', [hash]);
      return rows.length ? toKey(rows[0]) : undefined;
    },

    async getKey(id) {
      const rows = await db.query('SELECT * FROM api_keys WHERE id = ?', [id]);
      return rows.length ? toKey(rows[0]) : undefined;
    },

    async listKeys(accountId, page) {
      // Each page is a range of api_keys_list, or of api_keys_account_list for one account: read
      // from the cursor on and stopped at the limit, however many keys there are.
      const params: SqlValue[] = [];
      const where: string[] = [];
      if (accountId !== undefined) (where.push('account_id = ?'), params.push(accountId));
      const desc = page.order === 'desc';
      if (page.after) {
        where.push(`(created_at, id) ${desc ? '<' : '>'} (?, ?)`);
        params.push(page.after.createdAt, page.after.id);
      }
      params.push(clampLimit(page.limit, 100));
      const dir = desc ? 'DESC' : 'ASC';
      const filter = where.length ? `WHERE ${where.join(' AND ')}` : '';
      const rows = await db.query(`SELECT * FROM api_keys ${filter} ORDER BY created_at ${dir}, id ${dir} LIMIT ?`, params);
      return rows.map(toKey);
    },

    async keysByPrefix(prefix, limit) {
      const rows = await db.query('SELECT * FROM api_keys WHERE prefix = ? LIMIT ?', [prefix, clampLimit(limit, 2)]);
      return rows.map(toKey);
    },

    async revokeKey(id, now) {
      return (await db.run('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', [now, id])) === 1;
    },

    async touchKey(id, now) {
      // Only ever moves forward, so a late write from a slow request cannot rewind it.
      await db.run('UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)', [now, id, now]);
    },
  };
}
