import { errors } from '../core/errors.js';
import { constraintKind, type SqlDriver, type SqlExecutor, type SqlValue } from './driver.js';
import { adjustInTx, KeyBudgetExceeded, reserveInTx } from './budgets.js';
import { clampLimit, insertEntry } from './ledger.js';
import { enqueueVideoEvent } from './webhooks.js';
import type { VideoEventType } from './webhook-types.js';
import { assertMicros, int, json, toJob, toReconcile } from './rows.js';
import type { Store } from './types.js';

export type JobOps = Pick<
  Store,
  | 'createJobWithHold'
  | 'markJobSubmitted'
  | 'rejectJob'
  | 'getJob'
  | 'getJobByCallbackToken'
  | 'acquirePollLease'
  | 'recordPoll'
  | 'completeJob'
  | 'failJob'
  | 'dueJobs'
  | 'overdueJobs'
  | 'staleSubmittingJobs'
  | 'recordReconcile'
  | 'listReconcile'
  | 'listJobs'
  | 'deleteJob'
  | 'schedulePurge'
  | 'duePurges'
  | 'markPurged'
>;

const INSERT_JOB = `INSERT INTO jobs (
  id, account_id, key_id, model, vendor, upstream, task_id, public_id, state,
  est_seconds, hold_micros, price_per_second_micros, seconds, billable_seconds, cost_micros,
  error_code, error_message, request, task_meta, vendor_data, outputs, usage, progress,
  created_at, updated_at, completed_at, next_poll_at, lease_until, deadline_at, webhook_url, callback_token, dialect, remixed_from, uploads, request_id
) VALUES (?, ?, ?, ?, ?, NULL, NULL, NULL, 'submitting', ?, ?, ?, NULL, NULL, NULL, NULL, NULL, ?, '{}', '{}', '[]', NULL, NULL, ?, ?, NULL, ?, NULL, ?, ?, ?, ?, ?, ?, ?)`;

/** Every settling CAS returns these, so the ledger rows, the key's budget and the event can follow. */
const SETTLED_COLUMNS = 'account_id, hold_micros, key_id, model, upstream, public_id, created_at, webhook_url';

/** States a client can see (submitting and rejected jobs never reached a client). */
const VISIBLE = `state IN ('processing', 'completed', 'failed') AND deleted_at IS NULL`;

/** What a settling compare-and-swap hands back: who to credit and how much was held. */
interface Settled {
  accountId: string;
  hold: number;
  keyId: string;
  model: string;
  upstream: string | null;
  publicId: string | null;
  createdAt: number;
  webhookUrl: string | null;
}

/**
 * Runs a state compare-and-swap (an UPDATE ... RETURNING account_id, hold_micros) and, when it
 * won, the ledger entries and balance move in the same transaction. Returns false when the CAS
 * found the job in another state, or when the ledger already held one of the entries (the
 * unique (ref, kind) index refused it and everything was rolled back).
 */
async function settle(
  db: SqlDriver,
  cas: (tx: SqlExecutor) => Promise<Settled | undefined>,
  entries: (s: Settled) => Array<{ kind: 'release' | 'capture'; delta: number; note: string | null }>,
  jobId: string,
  now: number,
  event?: VideoEventType,
): Promise<boolean> {
  try {
    return await db.transaction(async (tx) => {
      const won = await cas(tx);
      if (!won) return false;
      let total = 0;
      const by = { keyId: won.keyId, model: won.model, upstream: won.upstream };
      for (const e of entries(won)) {
        await insertEntry(tx, { accountId: won.accountId, kind: e.kind, delta: e.delta, ref: jobId, note: e.note, now, by });
        total += e.delta;
      }
      if (total !== 0) await tx.run('UPDATE accounts SET balance = balance + ? WHERE id = ?', [total, won.accountId]);
      // The key's budget counted the hold; from now on it counts what was really spent (total is
      // the net change: -capture + hold). Same period as the hold: the job's creation time.
      await adjustInTx(tx, won.keyId, 0 - total, won.createdAt);
      // The outbox row commits with the settlement or not at all: no event without a settled job,
      // no settled job without its event.
      if (event && won.publicId) {
        await enqueueVideoEvent(tx, { accountId: won.accountId, type: event, videoId: won.publicId, webhookUrl: won.webhookUrl, now });
      }
      return true;
    });
  } catch (e) {
    if (constraintKind(e) === 'unique') return false;
    throw e;
  }
}

/** Rolls the hold's transaction back (after the key budget was counted) when the balance is short. */
class InsufficientBalance extends Error {}

function settledFrom(rows: Array<Record<string, unknown>>): Settled | undefined {
  const r = rows[0];
  if (!r) return undefined;
  const strOrNull = (v: unknown) => (v === null || v === undefined ? null : String(v));
  return {
    accountId: String(r.account_id),
    hold: int(r.hold_micros),
    keyId: String(r.key_id),
    model: String(r.model),
    upstream: strOrNull(r.upstream),
    publicId: strOrNull(r.public_id),
    createdAt: int(r.created_at),
    webhookUrl: strOrNull(r.webhook_url),
  };
}

export function jobOps(db: SqlDriver): JobOps {
  const recordReconcile: Store['recordReconcile'] = async (r) => {
    await db.run('INSERT INTO reconcile (job_id, upstream, reason, created_at) VALUES (?, ?, ?, ?)', [r.jobId, r.upstream, r.reason, r.now]);
  };

  return {
    async createJobWithHold(job, hold, now) {
      assertMicros('hold', hold);
      assertMicros('pricePerSecondMicros', job.pricePerSecondMicros);
      try {
        return await db.transaction(async (tx) => {
        // The key's budget first (it throws KeyBudgetExceeded, rolling back a partly counted hold).
        await reserveInTx(tx, job.keyId, hold, job.createdAt);
        // The balance check and the deduction are one conditional UPDATE: concurrent holds on one
        // account serialise on its row and each re-checks the balance the previous one left.
        const moved = await tx.run('UPDATE accounts SET balance = balance - ? WHERE id = ? AND balance >= ?', [hold, job.accountId, hold]);
        if (moved === 0) {
          const exists = await tx.query('SELECT 1 AS found FROM accounts WHERE id = ?', [job.accountId]);
          if (exists.length === 0) throw errors.notFound(`Account '${job.accountId}' does not exist.`, 'account_not_found');
          throw new InsufficientBalance();
        }
        const by = { keyId: job.keyId, model: job.model, upstream: null };
        await insertEntry(tx, { accountId: job.accountId, kind: 'hold', delta: 0 - hold, ref: job.id, note: job.model, now, by });
        await tx.run(INSERT_JOB, [
          job.id,
          job.accountId,
          job.keyId,
          job.model,
          job.vendor,
          job.estSeconds,
          hold,
          job.pricePerSecondMicros,
          json(job.request ?? {}),
          job.createdAt,
          now,
          now,
          job.deadlineAt,
          job.webhookUrl ?? null,
          job.callbackToken ?? null,
          job.dialect ?? 'spec',
          job.remixedFrom ?? null,
          json(job.uploads ?? []),
          job.requestId ?? null,
        ]);
        return 'ok' as const;
        });
      } catch (e) {
        if (e instanceof KeyBudgetExceeded) return 'key_budget';
        if (e instanceof InsufficientBalance) return 'insufficient';
        throw e;
      }
    },

    async markJobSubmitted(jobId, p) {
      const changed = await db.run(
        `UPDATE jobs SET state = 'processing', upstream = ?, task_id = ?, public_id = ?, task_meta = ?, next_poll_at = ?, updated_at = ?
         WHERE id = ? AND state = 'submitting'`,
        [p.upstream, p.taskId, p.publicId, json(p.taskMeta ?? {}), p.nextPollAt, p.now, jobId],
      );
      if (changed === 0) {
        // The upstream now runs a task that no job tracks (the job was settled meanwhile, or never
        // existed): leave a trail so the task can be reconciled with the vendor's bill.
        const rows = await db.query('SELECT state FROM jobs WHERE id = ?', [jobId]);
        const state = rows.length ? String(rows[0].state) : 'missing';
        await recordReconcile({ jobId, upstream: p.upstream, reason: `upstream accepted task ${p.taskId} while the job was ${state}`, now: p.now });
      }
      return changed === 1;
    },

    async rejectJob(jobId, reason, now) {
      return settle(
        db,
        async (tx) =>
          settledFrom(
            await tx.query(
              `UPDATE jobs SET state = 'rejected', error_code = 'rejected', error_message = ?, updated_at = ?, completed_at = ?, lease_until = NULL
               WHERE id = ? AND state = 'submitting' RETURNING ${SETTLED_COLUMNS}`,
              [reason, now, now, jobId],
            ),
          ),
        (s) => [{ kind: 'release', delta: s.hold, note: 'rejected' }],
        jobId,
        now,
      );
    },

    async getJob(jobId) {
      const rows = await db.query('SELECT * FROM jobs WHERE id = ?', [jobId]);
      return rows.length ? toJob(rows[0]) : undefined;
    },

    async getJobByCallbackToken(token) {
      const rows = await db.query('SELECT * FROM jobs WHERE callback_token = ?', [token]);
      return rows.length ? toJob(rows[0]) : undefined;
    },

    async acquirePollLease(jobId, now, leaseMs) {
      const changed = await db.run(
        `UPDATE jobs SET lease_until = ? WHERE id = ? AND state = 'processing' AND (lease_until IS NULL OR lease_until <= ?)`,
        [now + Math.max(0, Math.floor(leaseMs)), jobId, now],
      );
      return changed === 1;
    },

    async recordPoll(jobId, p) {
      await db.run(
        `UPDATE jobs SET vendor_data = ?, progress = ?, phase = COALESCE(?, phase), next_poll_at = ?, updated_at = ?, lease_until = NULL
         WHERE id = ? AND state = 'processing'`,
        [json(p.vendorData ?? {}), p.progress, p.phase ?? null, p.nextPollAt, p.now, jobId],
      );
    },

    async completeJob(jobId, p) {
      assertMicros('costMicros', p.costMicros);
      return settle(
        db,
        async (tx) =>
          settledFrom(
            await tx.query(
              `UPDATE jobs SET state = 'completed', seconds = ?, billable_seconds = ?, cost_micros = ?, usage = ?, outputs = ?,
                 vendor_data = ?, updated_at = ?, completed_at = ?, lease_until = NULL
               WHERE id = ? AND state = 'processing' RETURNING ${SETTLED_COLUMNS}`,
              [p.seconds, p.billableSeconds, p.costMicros, json(p.usage), json(p.outputs ?? []), json(p.vendorData ?? {}), p.now, p.now, jobId],
            ),
          ),
        (s) => [
          { kind: 'release', delta: s.hold, note: 'completed' },
          { kind: 'capture', delta: 0 - p.costMicros, note: `${p.billableSeconds}s` },
        ],
        jobId,
        p.now,
        'video.completed',
      );
    },

    async failJob(jobId, p) {
      return settle(
        db,
        async (tx) =>
          settledFrom(
            await tx.query(
              `UPDATE jobs SET state = 'failed', error_code = ?, error_message = ?, vendor_data = ?, updated_at = ?, completed_at = ?, lease_until = NULL
               WHERE id = ? AND state IN ('processing', 'submitting') RETURNING ${SETTLED_COLUMNS}`,
              [p.code, p.message, json(p.vendorData ?? {}), p.now, p.now, jobId],
            ),
          ),
        (s) => [{ kind: 'release', delta: s.hold, note: `failed: ${p.code}` }],
        jobId,
        p.now,
        p.code === 'cancelled' ? 'video.cancelled' : 'video.failed',
      );
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

    recordReconcile,

    async listJobs(accountId, p) {
      const desc = p.order === 'desc';
      const params: SqlValue[] = [];
      const where = [VISIBLE];
      if (accountId !== undefined) (where.push('account_id = ?'), params.push(accountId));
      if (p.state !== undefined) (where.push('state = ?'), params.push(p.state));
      if (p.model !== undefined) (where.push('model = ?'), params.push(p.model));
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

    async deleteJob(jobId, now) {
      const changed = await db.run(
        // A settled job is purged at once; a processing one when it settles (its upstream may still read the uploads).
        `UPDATE jobs SET deleted_at = ?, purge_at = CASE WHEN state = 'processing' THEN NULL ELSE CAST(? AS BIGINT) END, updated_at = ?
         WHERE id = ? AND state IN ('processing', 'completed', 'failed') AND deleted_at IS NULL`,
        [now, now, now, jobId],
      );
      return changed === 1;
    },

    async schedulePurge(jobId, at) {
      await db.run(`UPDATE jobs SET purge_at = ? WHERE id = ? AND purge_at IS NULL`, [at, jobId]);
    },

    async duePurges(now, limit) {
      const rows = await db.query('SELECT * FROM jobs WHERE purge_at <= ? ORDER BY purge_at, id LIMIT ?', [now, clampLimit(limit, 100)]);
      return rows.map(toJob);
    },

    async markPurged(jobId) {
      await db.run(`UPDATE jobs SET uploads = '[]', purge_at = NULL WHERE id = ?`, [jobId]);
    },

    async listReconcile(limit) {
      const rows = await db.query('SELECT * FROM reconcile ORDER BY id DESC LIMIT ?', [clampLimit(limit, 100)]);
      return rows.map(toReconcile);
    },
  };
}
