import { errors } from '../core/errors.js';
import type { Row, SqlDriver, SqlExecutor } from './driver.js';
import type { IdempotencyClaim, IdempotencyRecord, IdempotencyStore } from './idempotency-types.js';
import { int, intOrNull } from './rows.js';

/**
 * Migration 19 (migrations.ts; never edited once released). The primary key is what makes two
 * requests racing on one key, on any instances, one job: the first insert wins. The expiry index
 * serves the refresher's bounded prune.
 */
export const IDEMPOTENCY_SCHEMA = `
CREATE TABLE idempotency_keys (
  account_id TEXT NOT NULL,
  idem_key TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  claim TEXT NOT NULL,
  claimed_at BIGINT NOT NULL,
  job_id TEXT,
  status INTEGER,
  answer TEXT,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (account_id, idem_key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
`;

function toRecord(r: Row): IdempotencyRecord {
  return {
    accountId: String(r.account_id),
    key: String(r.idem_key),
    claim: String(r.claim),
    endpoint: String(r.endpoint),
    fingerprint: String(r.fingerprint),
    claimedAt: int(r.claimed_at),
    jobId: r.job_id === null || r.job_id === undefined ? null : String(r.job_id),
    status: intOrNull(r.status),
    answer: r.answer === null || r.answer === undefined ? null : String(r.answer),
    createdAt: int(r.created_at),
    expiresAt: int(r.expires_at),
  };
}

/** Thrown inside a job's hold transaction when its request no longer holds its key: nothing is written. */
export class IdempotencyKeyLost extends Error {}

/**
 * Links a job to the key its request holds, in the transaction that writes the job and its hold.
 * A request whose key was taken over (judged abandoned) fails here and holds nothing, so however
 * many requests ever held a key, at most one job is made under it.
 */
export async function linkJobInTx(tx: SqlExecutor, c: IdempotencyClaim, jobId: string): Promise<void> {
  const linked = await tx.run('UPDATE idempotency_keys SET job_id = ? WHERE account_id = ? AND idem_key = ? AND claim = ? AND job_id IS NULL', [
    jobId,
    c.accountId,
    c.key,
    c.claim,
  ]);
  if (linked === 0) throw new IdempotencyKeyLost();
}

const WHERE_HELD = 'account_id = ? AND idem_key = ? AND claim = ?';

export function idempotencyOps(db: SqlDriver): IdempotencyStore {
  const claim: IdempotencyStore['claimIdempotencyKey'] = async (r) => {
    // A record pruned between the insert and the read is free: the next round records it.
    for (let round = 0; round < 3; round++) {
      const inserted = await db.run(
        `INSERT INTO idempotency_keys (account_id, idem_key, endpoint, fingerprint, claim, claimed_at, job_id, status, answer, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?, ?) ON CONFLICT (account_id, idem_key) DO NOTHING`,
        [r.accountId, r.key, r.endpoint, r.fingerprint, r.claim, r.now, r.now, r.expiresAt],
      );
      if (inserted > 0) return 'claimed';
      const rows = await db.query('SELECT * FROM idempotency_keys WHERE account_id = ? AND idem_key = ?', [r.accountId, r.key]);
      if (rows[0]) return toRecord(rows[0]);
    }
    throw errors.idempotencyKeyInUse();
  };

  return {
    claimIdempotencyKey: claim,

    async retakeIdempotencyKey(r, seen) {
      // The job as judged is part of the condition: a job linked meanwhile (a live request that was
      // only slow) keeps the record, and this request is told the key is in use.
      const changed = await db.run(
        `UPDATE idempotency_keys SET endpoint = ?, fingerprint = ?, claim = ?, claimed_at = ?, job_id = NULL, status = NULL, answer = NULL, created_at = ?, expires_at = ?
         WHERE ${WHERE_HELD} AND COALESCE(job_id, '') = ?`,
        [r.endpoint, r.fingerprint, r.claim, r.now, r.now, r.expiresAt, r.accountId, r.key, seen.claim, seen.jobId ?? ''],
      );
      if (changed > 0) return true;
      // A record pruned meanwhile is free: insert it again.
      return (await claim(r)) === 'claimed';
    },

    async finishIdempotencyKey(c, status, answer) {
      await db.run(`UPDATE idempotency_keys SET status = ?, answer = ? WHERE ${WHERE_HELD}`, [status, answer, c.accountId, c.key, c.claim]);
    },

    async releaseIdempotencyKey(c) {
      // A refused job (rejected) made nothing; any other state is a job that exists or may yet.
      await db.run(
        `DELETE FROM idempotency_keys WHERE ${WHERE_HELD}
         AND (job_id IS NULL OR NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = idempotency_keys.job_id AND jobs.state <> 'rejected'))`,
        [c.accountId, c.key, c.claim],
      );
    },

    async pruneIdempotencyKeys(now, limit) {
      // Bounded: a sweep after a long stop removes a batch per pass, not every expired row at once.
      return db.run(
        `DELETE FROM idempotency_keys WHERE (account_id, idem_key) IN
           (SELECT account_id, idem_key FROM idempotency_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`,
        [now, limit],
      );
    },
  };
}
