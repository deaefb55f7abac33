import { errors } from '../core/errors.js';
import type { SqlDriver } from './driver.js';
import { KeyBudgetExceeded, reserveInTx } from './budgets.js';
import { insertEntry } from './ledger.js';
import { IdempotencyKeyLost, linkJobInTx } from './idempotency.js';
import { SETTLED_COLUMNS, settledFrom, settleJob } from './job-settlement.js';
import { assertMicros, json } from './rows.js';
import type { Store } from './types.js';

/** A job's life in the store: its hold, submission, polls, settlement (job-settlement.ts), deletion and purge. */
export type JobOps = Pick<
  Store,
  | 'createJobWithHold'
  | 'markJobSubmitted'
  | 'rejectJob'
  | 'acquirePollLease'
  | 'recordPoll'
  | 'completeJob'
  | 'failJob'
  | 'recordReconcile'
  | 'deleteJob'
  | 'schedulePurge'
  | 'markPurged'
>;

const INSERT_JOB = `INSERT INTO jobs (
  id, account_id, key_id, model, vendor, upstream, task_id, public_id, state,
  est_seconds, hold_micros, price_per_second_micros, seconds, billable_seconds, cost_micros,
  error_code, error_message, request, task_meta, vendor_data, outputs, usage, progress,
  created_at, updated_at, completed_at, next_poll_at, lease_until, deadline_at, webhook_url, callback_token, dialect, remixed_from, uploads, request_id
) VALUES (?, ?, ?, ?, ?, NULL, NULL, NULL, 'submitting', ?, ?, ?, NULL, NULL, NULL, NULL, NULL, ?, '{}', '{}', '[]', NULL, NULL, ?, ?, NULL, ?, NULL, ?, ?, ?, ?, ?, ?, ?)`;

/** Rolls the hold's transaction back (after the key budget was counted) when the balance is short. */
class InsufficientBalance extends Error {}

export function jobOps(db: SqlDriver): JobOps {
  const recordReconcile: Store['recordReconcile'] = async (r) => {
    await db.run('INSERT INTO reconcile (job_id, upstream, reason, created_at) VALUES (?, ?, ?, ?)', [r.jobId, r.upstream, r.reason, r.now]);
  };

  return {
    async createJobWithHold(job, hold, now, inFlight = 0) {
      assertMicros('hold', hold);
      assertMicros('inFlight', inFlight);
      assertMicros('pricePerSecondMicros', job.pricePerSecondMicros);
      try {
        return await db.transaction(async (tx) => {
        // The request's Idempotency-Key first: a request that no longer holds it writes nothing.
        if (job.idempotency) await linkJobInTx(tx, job.idempotency, job.id);
        // The key's budget first (it throws KeyBudgetExceeded, rolling back a partly counted hold).
        await reserveInTx(tx, job.keyId, hold, job.createdAt);
        // The balance check and the deduction are one conditional UPDATE: concurrent holds on one
        // account serialise on its row and each re-checks the balance the previous one left. The
        // balance must also cover what the caller's process has promised to requests in flight.
        const moved = await tx.run('UPDATE accounts SET balance = balance - ? WHERE id = ? AND balance >= ?', [
          hold,
          job.accountId,
          hold + inFlight,
        ]);
        if (moved === 0) {
          const exists = await tx.query('SELECT 1 AS found FROM accounts WHERE id = ?', [job.accountId]);
          if (exists.length === 0) throw errors.notFound(`Account '${job.accountId}' does not exist.`, 'account_not_found');
          throw new InsufficientBalance();
        }
        const by = { keyId: job.keyId, model: job.model, upstream: null };
        await insertEntry(tx, db.dialect, { accountId: job.accountId, kind: 'hold', delta: 0 - hold, ref: job.id, note: job.model, now, by });
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
        if (e instanceof IdempotencyKeyLost) return 'key_lost';
        throw e;
      }
    },

    async markJobSubmitted(jobId, p) {
      const changed = await db.run(
        `UPDATE jobs SET state = 'processing', upstream = ?, task_id = ?, public_id = ?, task_meta = ?, vendor_data = ?, next_poll_at = ?, updated_at = ?
         WHERE id = ? AND state = 'submitting'`,
        [p.upstream, p.taskId, p.publicId, json(p.taskMeta ?? {}), json(p.vendorData ?? {}), p.nextPollAt, p.now, jobId],
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

    async rejectJob(jobId, reason, now, reconcile) {
      return settleJob(
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
        undefined,
        reconcile,
      );
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
      return settleJob(
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
      return settleJob(
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
        p.reconcile,
      );
    },

    recordReconcile,

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

    async markPurged(jobId) {
      await db.run(`UPDATE jobs SET uploads = '[]', purge_at = NULL WHERE id = ?`, [jobId]);
    },
  };
}
