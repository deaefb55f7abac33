import { randomUUID } from 'node:crypto';
import type { Clock } from '../core/clock.js';
import { errors } from '../core/errors.js';
import type { IdempotencyClaim, IdempotencyRecord } from '../store/idempotency-types.js';
import type { Store } from '../store/types.js';

/** How long a key names its request: a day, as clients' retries (and Stripe's keys) assume. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** What a request with a key does: process it holding `claim`, or answer again what its first answer was. */
export type IdempotentStart =
  | { run: IdempotencyClaim }
  | { replay: { jobId: string | null; answer: string | null; status: number } };

/** A request that made a job answers 200 (every create does); recorded once it has answered. */
const CREATED = 200;

/**
 * Idempotency-Key records for the requests that create jobs. The first request with a key records
 * it (the store's unique key of account and value decides between racers on any instance), and
 * links the job it makes in the transaction that holds the job's money, conditional on still
 * holding the key: so one key makes at most one job, whatever happens to the requests that held it.
 *
 * A repeat is judged on the record: another endpoint or other fields (another fingerprint) is
 * 422 `idempotency_key_reused`; a job made (not refused) is answered again, rendered from its
 * current state; a job still being submitted is 409 `idempotency_key_in_use`, and so is a record
 * without a job whose request is younger than `abandonAfterMs`. Older, its request is taken for
 * dead (the create's own deadline has passed) and the repeat takes the key over; should that
 * request be alive after all, its job's transaction finds the key gone and writes nothing. A
 * request that fails releases its key, so errors (402, 429, 503) are never answered again.
 */
export class IdempotencyKeys {
  constructor(
    private readonly store: Pick<Store, 'claimIdempotencyKey' | 'retakeIdempotencyKey' | 'finishIdempotencyKey' | 'releaseIdempotencyKey' | 'getJob'>,
    private readonly clock: Clock,
    private readonly abandonAfterMs: number,
  ) {}

  async start(accountId: string, key: string, endpoint: string, fingerprint: string): Promise<IdempotentStart> {
    // A few rounds: each lost race re-reads a record that another request just changed.
    for (let round = 0; round < 3; round++) {
      const now = this.clock.now();
      const mine = { accountId, key, claim: randomUUID(), endpoint, fingerprint, now, expiresAt: now + IDEMPOTENCY_TTL_MS };
      const found = await this.store.claimIdempotencyKey(mine);
      if (found === 'claimed') return { run: mine };
      const verdict = await this.judge(found, endpoint, fingerprint, now);
      if (verdict !== 'free') return verdict;
      if (await this.store.retakeIdempotencyKey(mine, { claim: found.claim, jobId: found.jobId })) return { run: mine };
    }
    throw errors.idempotencyKeyInUse();
  }

  /** What a record another request wrote means for this one: answer again, refuse, or take it ('free'). */
  private async judge(found: IdempotencyRecord, endpoint: string, fingerprint: string, now: number): Promise<IdempotentStart | 'free'> {
    if (found.expiresAt <= now) return 'free';
    if (found.endpoint !== endpoint || found.fingerprint !== fingerprint) throw errors.idempotencyKeyReused();
    if (found.status !== null) return { replay: { jobId: found.jobId, answer: found.answer, status: found.status } };
    if (found.jobId !== null) {
      const job = await this.store.getJob(found.jobId);
      // Refused (or gone): nothing was made or billed, and its request is failing or dead.
      if (!job || job.state === 'rejected') return 'free';
      // Its vendor call still runs (or its process died: the refresher refuses the job in time).
      if (job.state === 'submitting') throw errors.idempotencyKeyInUse();
      // Made: the answer is the job, whether or not its request lived to record that it answered.
      return { replay: { jobId: found.jobId, answer: null, status: CREATED } };
    }
    if (now - found.claimedAt < this.abandonAfterMs) throw errors.idempotencyKeyInUse();
    return 'free';
  }

  /** The request answered `status`; `answer`: what an answer without a job keeps to be rendered again. */
  async finish(claim: IdempotencyClaim, status: number, answer: string | null = null): Promise<void> {
    await this.store.finishIdempotencyKey(claim, status, answer);
  }

  /** The request failed: a retry with the key processes anew (unless a job was made after all). */
  async release(claim: IdempotencyClaim): Promise<void> {
    await this.store.releaseIdempotencyKey(claim);
  }
}
