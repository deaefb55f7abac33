/** Store contract for video jobs: created with their hold, polled, settled exactly once, listed, deleted and purged. */

import type { JsonObject } from '../core/json.js';
import type { Micros } from '../core/money.js';
import type { IdempotencyClaim } from './idempotency-types.js';

/**
 * submitting: row and hold exist, upstream create in flight
 * processing: upstream accepted; being polled
 * completed / failed: settled (hold captured / released)
 * rejected: no upstream accepted it; hold released; never shown to clients
 */
export type JobState = 'submitting' | 'processing' | 'completed' | 'failed' | 'rejected';

export interface JobRecord {
  id: string;
  accountId: string;
  keyId: string;
  model: string;
  vendor: string;
  /** Upstream that accepted the job (null while submitting). */
  upstream: string | null;
  taskId: string | null;
  /** The sealed public id (set once the upstream accepted). */
  publicId: string | null;
  state: JobState;
  estSeconds: number;
  holdMicros: Micros;
  pricePerSecondMicros: Micros;
  /** Actual seconds (completed). */
  seconds: number | null;
  billableSeconds: number | null;
  costMicros: Micros | null;
  errorCode: string | null;
  errorMessage: string | null;
  /** What was asked: model, prompt (truncated), standard fields; never secrets. */
  request: JsonObject;
  /** Adapter-private task data (TaskRef.meta). */
  taskMeta: JsonObject;
  /** The vendor's last payload minus mapped fields. */
  vendorData: JsonObject;
  /** VideoOutput[] as JSON, plus local blob paths for inline results. */
  outputs: JsonObject[];
  usage: JsonObject | null;
  progress: number | null;
  createdAt: number;
  updatedAt: number;
  completedAt: number | null;
  nextPollAt: number;
  leaseUntil: number | null;
  deadlineAt: number;
  /** The client's own webhook target for this job (request field gateway_webhook_url). */
  /** The x-request-id of the create that made the job (its logs and upstream calls carry it too). */
  requestId: string | null;
  webhookUrl: string | null;
  /** Secret path token of the vendor's callback into the gateway for this job. */
  callbackToken: string | null;
  /** Which public surface created the job, and so answers for it: the spec's or OpenAI's Videos API. */
  dialect: JobDialect;
  /** What the vendor last said while processing: still queued, or running. Null when it never said. */
  phase: 'queued' | 'running' | null;
  /** Public id of the video this one remixes. */
  remixedFrom: string | null;
  /** Set when the client deleted the job: it is gone from reads and lists; the row stays for the ledger. */
  deletedAt: number | null;
  /** Blob names of the client's uploaded inputs, removed at purgeAt. */
  uploads: string[];
  /** When the uploads (and, for a deleted job, the stored outputs) are removed. */
  purgeAt: number | null;
}

export type JobDialect = 'spec' | 'openai';

export type NewJob = Pick<
  JobRecord,
  'id' | 'accountId' | 'keyId' | 'model' | 'vendor' | 'estSeconds' | 'pricePerSecondMicros' | 'request' | 'createdAt' | 'deadlineAt'
> &
  Partial<Pick<JobRecord, 'webhookUrl' | 'callbackToken' | 'dialect' | 'remixedFrom' | 'uploads' | 'requestId'>> & {
    /** The Idempotency-Key the creating request holds: linked to the job in the hold's transaction. */
    idempotency?: IdempotencyClaim;
  };

/** A position in an account's job list: the (created_at, id) of the last job seen. */
export interface JobCursor {
  createdAt: number;
  id: string;
}

/**
 * One page of visible jobs (one account's, or with no account every account's, for the operator),
 * narrowed by state, model and a creation time range [from, to).
 */
export interface JobListFilter {
  after?: JobCursor;
  limit: number;
  order: 'asc' | 'desc';
  state?: 'processing' | 'completed' | 'failed';
  model?: string;
  /** Only jobs whose model one of these shell patterns (`*`, `?`) names: a key limited to some models. */
  modelPatterns?: readonly string[];
  from?: number;
  to?: number;
}

export interface ReconcileRecord {
  id: number;
  jobId: string;
  upstream: string;
  reason: string;
  createdAt: number;
}

export interface JobStore {
  /**
   * Atomically: if the key's budget and the account's balance both cover the hold, count it against
   * the budget, deduct it, write the hold entry and insert the job as 'submitting'. `inFlight`
   * (default 0): money the calling process has promised to requests still running on the account
   * (billing/reservations.ts), not yet out of the balance: the balance must cover it besides the
   * hold, and only the hold is deducted. 'key_lost' (nothing written): the job names an
   * Idempotency-Key its request no longer holds (another request took it over as abandoned).
   */
  createJobWithHold(job: NewJob, hold: Micros, now: number, inFlight?: Micros): Promise<'ok' | 'insufficient' | 'key_budget' | 'key_lost'>;
  /**
   * submitting -> processing, pinned to the upstream that accepted it. False when the job was no
   * longer submitting (settled as an interrupted create meanwhile): the task is then recorded for
   * reconciliation, and nothing tracks it.
   */
  markJobSubmitted(
    jobId: string,
    p: {
      upstream: string;
      taskId: string;
      publicId: string;
      taskMeta: JsonObject;
      /** The job's vendor_data from the create answer (bounded and redacted); {} when absent. */
      vendorData?: JsonObject;
      nextPollAt: number;
      now: number;
    },
  ): Promise<boolean>;
  /**
   * submitting -> rejected, releasing the hold exactly once. True when this call settled the job (it
   * was still submitting): its hold was released here, and `reconcile` (a reason) recorded with it.
   */
  rejectJob(jobId: string, reason: string, now: number, reconcile?: string): Promise<boolean>;
  getJob(jobId: string): Promise<JobRecord | undefined>;
  /** The processing job a vendor callback token belongs to. */
  getJobByCallbackToken(token: string): Promise<JobRecord | undefined>;
  /** Compare-and-swap on lease_until: true when this caller now holds the poll lease. */
  acquirePollLease(jobId: string, now: number, leaseMs: number): Promise<boolean>;
  /** Records a poll of a job still processing and releases the lease. */
  recordPoll(
    jobId: string,
    p: { vendorData: JsonObject; progress: number | null; phase?: 'queued' | 'running' | null; nextPollAt: number; now: number },
  ): Promise<void>;
  /**
   * processing -> completed: release the hold, capture `costMicros`. Exactly once: returns false
   * (and writes nothing) when the job was not processing.
   */
  completeJob(
    jobId: string,
    p: {
      seconds: number;
      billableSeconds: number;
      costMicros: Micros;
      usage: JsonObject | null;
      outputs: JsonObject[];
      vendorData: JsonObject;
      now: number;
    },
  ): Promise<boolean>;
  /** processing|submitting -> failed: release the hold. Exactly once, like completeJob. */
  failJob(jobId: string, p: { code: string; message: string; vendorData: JsonObject; now: number; /** A reconciliation record's reason, written with the settlement. */ reconcile?: string }): Promise<boolean>;
  /** Processing jobs due for a background poll (next_poll_at <= now, lease free), oldest first. */
  dueJobs(now: number, limit: number): Promise<JobRecord[]>;
  /** Processing jobs past their deadline. */
  overdueJobs(now: number, limit: number): Promise<JobRecord[]>;
  /**
   * Jobs still 'submitting' that were created before `createdBefore`: the process that created
   * them died between the hold and the upstream answer. The refresher rejects them (releasing the
   * hold) and records them for reconciliation.
   */
  staleSubmittingJobs(createdBefore: number, limit: number): Promise<JobRecord[]>;
  /**
   * An account's visible jobs (processing, completed, failed; not deleted) after `after`, by
   * (created_at, id) in `order`. Served by the (account_id, created_at, id) index: a page costs the
   * same however many jobs the account has.
   */
  listJobs(accountId: string | undefined, p: JobListFilter): Promise<JobRecord[]>;
  /** Hides a job from reads and lists (settled: due for purge now; processing: purged once it settles). False when already gone. */
  deleteJob(jobId: string, now: number): Promise<boolean>;
  /** Sets when the job's uploads are removed (settle + retention). */
  schedulePurge(jobId: string, at: number): Promise<void>;
  /** Jobs whose uploads (or, once deleted, outputs) are due for removal. */
  duePurges(now: number, limit: number): Promise<JobRecord[]>;
  /** The job's uploads are gone (and, when deleted, its stored outputs): nothing left to purge. */
  markPurged(jobId: string): Promise<void>;
  recordReconcile(r: { jobId: string; upstream: string; reason: string; now: number }): Promise<void>;
  listReconcile(limit?: number): Promise<ReconcileRecord[]>;
}
