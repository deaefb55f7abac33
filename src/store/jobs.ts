import { errors } from '../core/errors.js';
import { constraintKind, type SqlDriver, type SqlExecutor } from './driver.js';
import { clampLimit, insertEntry } from './ledger.js';
import { assertMicros, int, json, toJob, toReconcile } from './rows.js';
import type { Store } from './types.js';

export type JobOps = Pick<
  Store,
  | 'createJobWithHold'
  | 'markJobSubmitted'
  | 'rejectJob'
  | 'getJob'
  | 'acquirePollLease'
  | 'recordPoll'
  | 'completeJob'
  | 'failJob'
  | 'dueJobs'
  | 'overdueJobs'
  | 'staleSubmittingJobs'
  | 'recordReconcile'
  | 'listReconcile'
>;

const INSERT_JOB = `INSERT INTO jobs (
  id, account_id, key_id, model, vendor, upstream, task_id, public_id, state,
  est_seconds, hold_micros, price_per_second_micros, seconds, billable_seconds, cost_micros,
  error_code, error_message, request, task_meta, vendor_data, outputs, usage, progress,
  created_at, updated_at, completed_at, next_poll_at, lease_until, deadline_at
) VALUES (?, ?, ?, ?, ?, NULL, NULL, NULL, 'submitting', ?, ?, ?, NULL, NULL, NULL, NULL, NULL, ?, '{}', '{}', '[]', NULL, NULL, ?, ?, NULL, ?, NULL, ?)`;

/** What a settling compare-and-swap hands back: who to credit and how much was held. */
interface Settled {
  accountId: string;
  hold: number;
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
): Promise<boolean> {
  try {
    return await db.transaction(async (tx) => {
      const won = await cas(tx);
      if (!won) return false;
      let total = 0;
      for (const e of entries(won)) {
        await insertEntry(tx, { accountId: won.accountId, kind: e.kind, delta: e.delta, ref: jobId, note: e.note, now });
        total += e.delta;
      }
      if (total !== 0) await tx.run('UPDATE accounts SET balance = balance + ? WHERE id = ?', [total, won.accountId]);
      return true;
    });
  } catch (e) {
    if (constraintKind(e) === 'unique') return false;
    throw e;
  }
}

function settledFrom(rows: Array<Record<string, unknown>>): Settled | undefined {
  return rows.length ? { accountId: String(rows[0].account_id), hold: int(rows[0].hold_micros) } : undefined;
}

export function jobOps(db: SqlDriver): JobOps {
  const recordReconcile: Store['recordReconcile'] = async (r) => {
    await db.run('INSERT INTO reconcile (job_id, upstream, reason, created_at) VALUES (?, ?, ?, ?)', [r.jobId, r.upstream, r.reason, r.now]);
  };

  return {
    async createJobWithHold(job, hold, now) {
      assertMicros('hold', hold);
      assertMicros('pricePerSecondMicros', job.pricePerSecondMicros);
      return db.transaction(async (tx) => {
        // The balance check and the deduction are one conditional UPDATE: concurrent holds on one
        // account serialise on its row and each re-checks the balance the previous one left.
        const moved = await tx.run('UPDATE accounts SET balance = balance - ? WHERE id = ? AND balance >= ?', [hold, job.accountId, hold]);
        if (moved === 0) {
          const exists = await tx.query('SELECT 1 AS found FROM accounts WHERE id = ?', [job.accountId]);
          if (exists.length === 0) throw errors.notFound(`Account '${job.accountId}' does not exist.`, 'account_not_found');
          return 'insufficient';
        }
        await insertEntry(tx, { accountId: job.accountId, kind: 'hold', delta: 0 - hold, ref: job.id, note: job.model, now });
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
        ]);
        return 'ok';
      });
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
    },

    async rejectJob(jobId, reason, now) {
      await settle(
        db,
        async (tx) =>
          settledFrom(
            await tx.query(
              `UPDATE jobs SET state = 'rejected', error_code = 'rejected', error_message = ?, updated_at = ?, completed_at = ?, lease_until = NULL
               WHERE id = ? AND state = 'submitting' RETURNING account_id, hold_micros`,
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

    async acquirePollLease(jobId, now, leaseMs) {
      const changed = await db.run(
        `UPDATE jobs SET lease_until = ? WHERE id = ? AND state = 'processing' AND (lease_until IS NULL OR lease_until <= ?)`,
        [now + Math.max(0, Math.floor(leaseMs)), jobId, now],
      );
      return changed === 1;
    },

    async recordPoll(jobId, p) {
      await db.run(
        `UPDATE jobs SET vendor_data = ?, progress = ?, next_poll_at = ?, updated_at = ?, lease_until = NULL
         WHERE id = ? AND state = 'processing'`,
        [json(p.vendorData ?? {}), p.progress, p.nextPollAt, p.now, jobId],
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
               WHERE id = ? AND state = 'processing' RETURNING account_id, hold_micros`,
              [p.seconds, p.billableSeconds, p.costMicros, json(p.usage), json(p.outputs ?? []), json(p.vendorData ?? {}), p.now, p.now, jobId],
            ),
          ),
        (s) => [
          { kind: 'release', delta: s.hold, note: 'completed' },
          { kind: 'capture', delta: 0 - p.costMicros, note: `${p.billableSeconds}s` },
        ],
        jobId,
        p.now,
      );
    },

    async failJob(jobId, p) {
      return settle(
        db,
        async (tx) =>
          settledFrom(
            await tx.query(
              `UPDATE jobs SET state = 'failed', error_code = ?, error_message = ?, vendor_data = ?, updated_at = ?, completed_at = ?, lease_until = NULL
               WHERE id = ? AND state IN ('processing', 'submitting') RETURNING account_id, hold_micros`,
              [p.code, p.message, json(p.vendorData ?? {}), p.now, p.now, jobId],
            ),
          ),
        (s) => [{ kind: 'release', delta: s.hold, note: `failed: ${p.code}` }],
        jobId,
        p.now,
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

    async listReconcile(limit) {
      const rows = await db.query('SELECT * FROM reconcile ORDER BY id DESC LIMIT ?', [clampLimit(limit, 100)]);
      return rows.map(toReconcile);
    },
  };
}
