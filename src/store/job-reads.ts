import type { SqlDriver, SqlValue } from './driver.js';
import { clampLimit } from './ledger.js';
import { toJob, toReconcile } from './rows.js';
import type { Store } from './types.js';

export type JobReadOps = Pick<
  Store,
  'getJob' | 'getJobByCallbackToken' | 'dueJobs' | 'overdueJobs' | 'staleSubmittingJobs' | 'listJobs' | 'duePurges' | 'listReconcile'
>;

/** States a client can see (submitting and rejected jobs never reached a client). */
const VISIBLE = `state IN ('processing', 'completed', 'failed') AND deleted_at IS NULL`;

/**
 * A model pattern (`*` any run, `?` one character, everything else literal, as `routing/glob.ts`)
 * as SQLite's GLOB, which is case-sensitive like it; only `[` means more to GLOB, so it is a class of itself.
 */
export function globForSqlite(pattern: string): string {
  return pattern.replace(/\[/g, '[[]');
}

/** The same pattern as PostgreSQL's LIKE (case-sensitive) with `\` as its escape character. */
export function likeForPostgres(pattern: string): string {
  return pattern.replace(/[\\%_]/g, '\\$&').replace(/\*/g, '%').replace(/\?/g, '_');
}

/** The job reads: one job, the poller's and the purger's scans, a client's list, the reconcile trail. */
export function jobReadOps(db: SqlDriver): JobReadOps {
  return {
    async getJob(jobId) {
      const rows = await db.query('SELECT * FROM jobs WHERE id = ?', [jobId]);
      return rows.length ? toJob(rows[0]) : undefined;
    },

    async getJobByCallbackToken(token) {
      const rows = await db.query('SELECT * FROM jobs WHERE callback_token = ?', [token]);
      return rows.length ? toJob(rows[0]) : undefined;
    },

    async dueJobs(now, limit) {
      const rows = await db.query(
        `SELECT * FROM jobs WHERE state = 'processing' AND next_poll_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
         ORDER BY next_poll_at, id LIMIT ?`,
        [now, now, clampLimit(limit, 100)],
      );
      return rows.map(toJob);
    },

    async overdueJobs(now, limit) {
      const rows = await db.query(
        `SELECT * FROM jobs WHERE state = 'processing' AND deadline_at <= ? ORDER BY deadline_at, id LIMIT ?`,
        [now, clampLimit(limit, 100)],
      );
      return rows.map(toJob);
    },

    async staleSubmittingJobs(createdBefore, limit) {
      const rows = await db.query(
        `SELECT * FROM jobs WHERE state = 'submitting' AND created_at <= ? ORDER BY created_at, id LIMIT ?`,
        [createdBefore, clampLimit(limit, 100)],
      );
      return rows.map(toJob);
    },

    async listJobs(accountId, p) {
      const desc = p.order === 'desc';
      const params: SqlValue[] = [];
      const where = [VISIBLE];
      if (accountId !== undefined) (where.push('account_id = ?'), params.push(accountId));
      if (p.state !== undefined) (where.push('state = ?'), params.push(p.state));
      if (p.model !== undefined) (where.push('model = ?'), params.push(p.model));
      if (p.modelPatterns !== undefined) {
        const match = db.dialect === 'sqlite' ? 'model GLOB ?' : "model LIKE ? ESCAPE '\\'";
        where.push(p.modelPatterns.length ? `(${p.modelPatterns.map(() => match).join(' OR ')})` : '1 = 0');
        for (const g of p.modelPatterns) params.push(db.dialect === 'sqlite' ? globForSqlite(g) : likeForPostgres(g));
      }
      if (p.from !== undefined) (where.push('created_at >= ?'), params.push(p.from));
      if (p.to !== undefined) (where.push('created_at < ?'), params.push(p.to));
      if (p.after) {
        // Row-value comparison walks the index from the cursor on (both dialects support it).
        where.push(`(created_at, id) ${desc ? '<' : '>'} (?, ?)`);
        params.push(p.after.createdAt, p.after.id);
      }
      params.push(clampLimit(p.limit, 100));
      const dir = desc ? 'DESC' : 'ASC';
      const rows = await db.query(`SELECT * FROM jobs WHERE ${where.join(' AND ')} ORDER BY created_at ${dir}, id ${dir} LIMIT ?`, params);
      return rows.map(toJob);
    },

    async duePurges(now, limit) {
      const rows = await db.query('SELECT * FROM jobs WHERE purge_at <= ? ORDER BY purge_at, id LIMIT ?', [now, clampLimit(limit, 100)]);
      return rows.map(toJob);
    },

    async listReconcile(limit) {
      const rows = await db.query('SELECT * FROM reconcile ORDER BY id DESC LIMIT ?', [clampLimit(limit, 100)]);
      return rows.map(toReconcile);
    },
  };
}
