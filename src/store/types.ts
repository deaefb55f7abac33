import type { JsonObject } from '../core/json.js';
import type { Micros } from '../core/money.js';
import type { WebhookStore } from './webhook-types.js';
import type { FileStore } from './file-types.js';

/** Per-minute quotas; undefined means "use the configured default". */
export interface RateLimits {
  embeddings?: { rpm?: number; tpm?: number };
  chat?: { rpm?: number; tpm?: number };
  video?: { rpm?: number };
}

export interface Account {
  id: string;
  name: string;
  /** Available balance in micros (holds already deducted). May go below zero only by a capture. */
  balance: Micros;
  /** Names of the upstreams enabled for the account; null = all. */
  upstreams: string[] | null;
  limits: RateLimits;
  createdAt: number;
}

export type KeyAction = 'video' | 'embeddings' | 'chat' | 'models';

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  /** SHA-256 hex of the whole key; the key itself is never stored. */
  hash: string;
  /** The first characters of the key, safe to show (e.g. "sk-gw-AbCd"). */
  prefix: string;
  name: string | null;
  /** Glob patterns of allowed model names; ["*"] = all. */
  models: string[];
  actions: KeyAction[];
  limits: RateLimits;
  expiresAt: number | null;
  revokedAt: number | null;
  lastUsedAt: number | null;
  createdAt: number;
  /** Spending cap of this key on top of its account's balance; null or absent = none. */
  budget?: KeyBudget | null;
}

/** UTC calendar periods a key budget can reset on. */
export type BudgetPeriod = 'day' | 'month';

/** Caps in micros; either or both may be set. */
export interface KeyBudget {
  /** Lifetime cap. */
  total: Micros | null;
  period: BudgetPeriod | null;
  /** Cap per `period` (UTC day or month). */
  periodLimit: Micros | null;
}

/** What a key has spent (captures and charges, plus holds and reservations still open). */
export interface KeySpend {
  total: Micros;
  /** In the current period of the key's budget (0 when it has none). */
  period: Micros;
  /** Start of the current period (Unix ms), or null when the budget has no period. */
  periodStart: number | null;
  /** Start of the next period (Unix ms), or null. */
  periodEnd: number | null;
}

/** Who caused a ledger movement, for spend-by-key reports. */
export interface Attribution {
  keyId?: string | null;
  model?: string | null;
  upstream?: string | null;
}

export interface UsageFilter {
  accountId?: string;
  keyId?: string;
  model?: string;
  /** Unix ms, inclusive. */
  from: number;
  /** Unix ms, exclusive. */
  to: number;
  groupBy: 'day' | 'model' | 'key';
}

export interface UsageRow {
  /** The day (YYYY-MM-DD, UTC), model name or key id, after group_by. */
  group: string;
  /** Captures and charges (micros, positive). */
  spent: Micros;
  /** Ledger entries counted (captures + charges). */
  requests: number;
}

/**
 * Append-only ledger. `delta` is the signed change to the available balance:
 * credit +, hold -, release +, capture -, charge -. `ref` ties an entry to a job or request;
 * (ref, kind) is unique, which is what makes every hold/capture/release happen at most once.
 */
export type LedgerKind = 'credit' | 'hold' | 'release' | 'capture' | 'charge';

export interface LedgerEntry {
  id: number;
  accountId: string;
  kind: LedgerKind;
  delta: Micros;
  ref: string;
  note: string | null;
  createdAt: number;
  keyId: string | null;
  model: string | null;
  upstream: string | null;
}

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
  Partial<Pick<JobRecord, 'webhookUrl' | 'callbackToken' | 'dialect' | 'remixedFrom' | 'uploads' | 'requestId'>>;

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
  from?: number;
  to?: number;
}

/** Ledger rows newest first, narrowed by kind, model, time [from, to) and an id cursor (`before`). */
export interface LedgerFilter {
  limit?: number;
  ref?: string;
  kind?: LedgerKind;
  model?: string;
  from?: number;
  to?: number;
  before?: number;
}

/** The outbox's pending deliveries, for the backlog gauges. */
export interface OutboxBacklog {
  /** How many, exact up to the cap asked for, and that cap when there are more. */
  pending: number;
  /** When the oldest was written (ms); null when none is pending. */
  oldestCreatedAt: number | null;
}

export interface ReconcileRecord {
  id: number;
  jobId: string;
  upstream: string;
  reason: string;
  createdAt: number;
}

export interface Store extends WebhookStore, FileStore {
  /** Runs pending versioned migrations. */
  migrate(): Promise<void>;
  close(): Promise<void>;
  readonly kind: 'sqlite' | 'postgres';

  // Accounts
  createAccount(a: { name: string; balance: Micros; upstreams: string[] | null; limits: RateLimits; now: number }): Promise<Account>;
  getAccount(id: string): Promise<Account | undefined>;
  getAccountByName(name: string): Promise<Account | undefined>;
  listAccounts(): Promise<Account[]>;
  updateAccount(id: string, patch: { upstreams?: string[] | null; limits?: RateLimits }): Promise<Account | undefined>;
  /** Adds a credit entry and raises the balance; returns the updated account. */
  topUp(accountId: string, amount: Micros, note: string | null, now: number): Promise<Account>;

  // Keys
  createKey(k: Omit<ApiKeyRecord, 'revokedAt' | 'lastUsedAt'>): Promise<ApiKeyRecord>;
  findKeyByHash(hash: string): Promise<ApiKeyRecord | undefined>;
  getKey(id: string): Promise<ApiKeyRecord | undefined>;
  listKeys(accountId?: string): Promise<ApiKeyRecord[]>;
  /** Returns false when the key does not exist or was already revoked. */
  revokeKey(id: string, now: number): Promise<boolean>;
  touchKey(id: string, now: number): Promise<void>;
  /** Sets (or with null clears) a key's budget; false when the key does not exist. */
  setKeyBudget(id: string, budget: KeyBudget | null): Promise<boolean>;
  /**
   * Counts `amount` against the key's budget (total and current period) when it fits, atomically
   * across instances; 'ok' without a write when the key has no budget.
   */
  reserveKeySpend(keyId: string, amount: Micros, at: number): Promise<'ok' | 'exceeded'>;
  /** Corrects a reservation made at `at` (same period) once the real cost is known; may be negative. */
  adjustKeySpend(keyId: string, delta: Micros, at: number): Promise<void>;
  keySpend(keyId: string, now: number): Promise<KeySpend>;

  // Ledger
  listLedger(accountId: string, opts?: LedgerFilter): Promise<LedgerEntry[]>;
  /**
   * One debit (kind 'charge') for a synchronous request (embeddings, chat), unique per ref.
   * Returns 'duplicate' when that ref was already charged.
   */
  charge(accountId: string, amount: Micros, ref: string, note: string | null, now: number, by?: Attribution): Promise<'ok' | 'duplicate'>;
  /**
   * Many charges in one transaction (the hot path batches them): each is still unique per ref.
   * Results are in input order; an item that failed on its own is an Error in its slot.
   */
  chargeMany(
    items: readonly { accountId: string; amount: Micros; ref: string; note: string | null; now: number; by?: Attribution }[],
  ): Promise<('ok' | 'duplicate' | Error)[]>;
  /** True when the account's balance covers `amount` (a cheap pre-flight check, no write). */
  canAfford(accountId: string, amount: Micros): Promise<boolean>;
  /** Spend (captures and charges) in [from, to), grouped; biggest spend first. */
  usage(filter: UsageFilter): Promise<UsageRow[]>;

  // Jobs
  /**
   * Atomically: if the key's budget and the account's balance both cover the hold, count it against
   * the budget, deduct it, write the hold entry and insert the job as 'submitting'.
   */
  createJobWithHold(job: NewJob, hold: Micros, now: number): Promise<'ok' | 'insufficient' | 'key_budget'>;
  /**
   * submitting -> processing, pinned to the upstream that accepted it. False when the job was no
   * longer submitting (settled as an interrupted create meanwhile): the task is then recorded for
   * reconciliation, and nothing tracks it.
   */
  markJobSubmitted(
    jobId: string,
    p: { upstream: string; taskId: string; publicId: string; taskMeta: JsonObject; nextPollAt: number; now: number },
  ): Promise<boolean>;
  /** submitting -> rejected, releasing the hold exactly once. */
  /** True when this call settled the job (it was still submitting): its hold was released here. */
  rejectJob(jobId: string, reason: string, now: number): Promise<boolean>;
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
  failJob(jobId: string, p: { code: string; message: string; vendorData: JsonObject; now: number }): Promise<boolean>;
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

  // Operations
  /** Versions recorded in schema_migrations (the readiness probe compares them with this build's). */
  appliedMigrations(): Promise<number[]>;
  /** Number of jobs in each state (the jobs-by-state gauge, read at scrape time). */
  countJobsByState(): Promise<Record<string, number>>;
  /**
   * Webhook deliveries not yet delivered or given up, counted up to `countCap` (a larger backlog
   * reads as `countCap`), and when the oldest of them was written (ms).
   */
  outboxBacklog(countCap: number): Promise<OutboxBacklog>;
}
