import type { Row, SqlDriver, SqlExecutor, SqlValue } from './driver.js';
import { fitsQuota, type FileRecord, type FileStore, type FileUsage } from './file-types.js';
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

const USAGE = 'SELECT COUNT(*) AS files, COALESCE(SUM(bytes), 0) AS bytes FROM files WHERE account_id = ? AND expires_at > ?';

async function usageOf(db: SqlExecutor, accountId: string, now: number): Promise<FileUsage> {
  const [r] = await db.query(USAGE, [accountId, now]);
  return { files: int(r?.files ?? 0), bytes: int(r?.bytes ?? 0) };
}

/** Files of the OpenAI Files API: every read is scoped to the owning account. */
export function fileOps(db: SqlDriver): FileStore {
  return {
    async createFile(f, quota) {
      return db.transaction(async (tx) => {
        // The usage is read and the row written by one creator of the account's files at a time:
        // on SQLite the transaction holds the database's one write lock from its start (BEGIN
        // IMMEDIATE); on PostgreSQL a per-account advisory lock, taken before the read, whose
        // holder commits before the next one reads (each statement of READ COMMITTED sees what was
        // committed before it began). Without it two creates would each count the files without the
        // other and both fit into the room for one. The row lock of the account is not used: balance
        // updates would queue behind uploads.
        if (db.dialect === 'postgres') await tx.query("SELECT pg_advisory_xact_lock(hashtext('gateway-files:' || ?::text))", [f.accountId]);
        const usage = await usageOf(tx, f.accountId, f.createdAt);
        if (!fitsQuota(usage, f.bytes, quota)) return { created: false, usage };
        await tx.run(
          'INSERT INTO files (id, account_id, purpose, filename, bytes, mime, blob, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
          [f.id, f.accountId, f.purpose, f.filename, f.bytes, f.mime, f.blob, f.createdAt, f.expiresAt],
        );
        return { created: true };
      });
    },
    fileUsage(accountId, now) {
      return usageOf(db, accountId, now);
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
