import type { Row, SqlDriver, SqlValue } from './driver.js';
import type { FileRecord, FileStore } from './file-types.js';
import { int } from './rows.js';

function toFile(r: Row): FileRecord {
  return {
    id: String(r.id),
    accountId: String(r.account_id),
    purpose: String(r.purpose),
    filename: String(r.filename),
    bytes: int(r.bytes),
    mime: String(r.mime),
    blob: String(r.blob),
    createdAt: int(r.created_at),
    expiresAt: int(r.expires_at),
  };
}

/** Files of the OpenAI Files API: every read is scoped to the owning account. */
export function fileOps(db: SqlDriver): FileStore {
  return {
    async createFile(f) {
      await db.run(
        'INSERT INTO files (id, account_id, purpose, filename, bytes, mime, blob, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
        [f.id, f.accountId, f.purpose, f.filename, f.bytes, f.mime, f.blob, f.createdAt, f.expiresAt],
      );
      return f;
    },
    async getFile(id, accountId, now) {
      const rows = await db.query('SELECT * FROM files WHERE id = ? AND account_id = ? AND expires_at > ?', [id, accountId, now]);
      return rows[0] ? toFile(rows[0]) : undefined;
    },
    async listFiles(accountId, now, opts) {
      // The (account_id, created_at, id) index serves every page, however many files the account has.
      const params: SqlValue[] = [accountId, now];
      let where = 'account_id = ? AND expires_at > ?';
      if (opts.purpose !== undefined) {
        where += ' AND purpose = ?';
        params.push(opts.purpose);
      }
      const dir = opts.order === 'asc' ? 'ASC' : 'DESC';
      if (opts.after) {
        const cmp = opts.order === 'asc' ? '>' : '<';
        where += ` AND (created_at ${cmp} ? OR (created_at = ? AND id ${cmp} ?))`;
        params.push(opts.after.createdAt, opts.after.createdAt, opts.after.id);
      }
      params.push(opts.limit);
      const rows = await db.query(`SELECT * FROM files WHERE ${where} ORDER BY created_at ${dir}, id ${dir} LIMIT ?`, params);
      return rows.map(toFile);
    },
    async deleteFile(id, accountId) {
      return (await db.run('DELETE FROM files WHERE id = ? AND account_id = ?', [id, accountId])) > 0;
    },
    async expiredFiles(now, limit) {
      const rows = await db.query('SELECT * FROM files WHERE expires_at <= ? ORDER BY expires_at LIMIT ?', [now, limit]);
      return rows.map(toFile);
    },
    async forgetFile(id) {
      await db.run('DELETE FROM files WHERE id = ?', [id]);
    },
  };
}
