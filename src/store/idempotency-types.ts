/**
 * Store contract for Idempotency-Key records (video/idempotency.ts says how they are used). A
 * record names one request of one account: the endpoint and the fingerprint of what was sent, the
 * claim of the request processing it, and, once a job exists, that job. The current answer is
 * rendered from the job, so nothing the vendor said is kept here.
 */

/** Who holds a key: the account's key value, and the random claim of the request processing it. */
export interface IdempotencyClaim {
  accountId: string;
  key: string;
  claim: string;
}

export interface IdempotencyRecord extends IdempotencyClaim {
  /** Method and route template (`POST /v1/videos/:id/remix`). */
  endpoint: string;
  /** sha256 (hex) of the request's canonical fields and file. */
  fingerprint: string;
  claimedAt: number;
  /** The job the request made (set in the transaction that holds its money). */
  jobId: string | null;
  /** Set once the request succeeded: the status it answered with. */
  status: number | null;
  /** What an answer that names no job keeps to be rendered again (a character: its sealed id and time). */
  answer: string | null;
  createdAt: number;
  expiresAt: number;
}

/** A record to write for a request taking a key. */
export type NewIdempotencyClaim = IdempotencyClaim & { endpoint: string; fingerprint: string; now: number; expiresAt: number };

export interface IdempotencyStore {
  /**
   * Records the key for this request when the account has no record of it: 'claimed'. Otherwise
   * the record that exists, unchanged (the unique key of account and value decides between racers).
   */
  claimIdempotencyKey(r: NewIdempotencyClaim): Promise<'claimed' | IdempotencyRecord>;
  /**
   * Replaces a record this request judged free (expired, abandoned, or left by a request whose job
   * was refused), only if it is still as judged: held by `seen.claim`, with `seen.jobId`. False when
   * another request changed it first.
   */
  retakeIdempotencyKey(r: NewIdempotencyClaim, seen: { claim: string; jobId: string | null }): Promise<boolean>;
  /** The request holding `c` succeeded: its status, and what an answer without a job keeps. */
  finishIdempotencyKey(c: IdempotencyClaim, status: number, answer: string | null): Promise<void>;
  /**
   * The request holding `c` failed: the record goes, so a retry processes anew; unless its job
   * exists after all (not refused), which repeats then answer.
   */
  releaseIdempotencyKey(c: IdempotencyClaim): Promise<void>;
  /** Removes up to `limit` records expired by `now`; how many went. */
  pruneIdempotencyKeys(now: number, limit: number): Promise<number>;
}
