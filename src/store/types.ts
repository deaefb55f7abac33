import type { Micros } from '../core/money.js';
import type { WebhookStore } from './webhook-types.js';
import type { FileStore } from './file-types.js';
import type { JobStore } from './job-types.js';
import type { IdempotencyStore } from './idempotency-types.js';
import type { MigrateOptions } from './migrate.js';

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

/** A page of the key list: the keys just past `after` (the (created_at, id) of the last key seen). */
export interface KeyListPage {
  after?: { createdAt: number; id: string };
  limit: number;
  order: 'asc' | 'desc';
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

export interface Store extends JobStore, WebhookStore, FileStore, IdempotencyStore {
  /** Runs pending versioned migrations (on PostgreSQL under a lock: see store/migrate.ts). */
  migrate(opts?: MigrateOptions): Promise<void>;
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
  /** One page of the keys (one account's, or with no account every account's) in (created_at, id) order. */
  listKeys(accountId: string | undefined, page: KeyListPage): Promise<ApiKeyRecord[]>;
  /** Keys whose display prefix is exactly `prefix`: at most `limit` of them, since a prefix need not be unique. */
  keysByPrefix(prefix: string, limit: number): Promise<ApiKeyRecord[]>;
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

  // Operations
  /** Versions recorded in schema_migrations (the readiness probe compares them with this build's). */
  appliedMigrations(): Promise<number[]>;
  /**
   * Whether a write could start now: on SQLite, that the database's write lock can be taken within
   * `maxWaitMs` (nothing is written); on PostgreSQL always true, its readiness being that it answers.
   */
  canTakeWriteLock(maxWaitMs: number): Promise<boolean>;
  /**
   * On SQLite, whether writes have been failing lately for want of room or a working file (a full
   * disk still lets the write lock be taken); on PostgreSQL always false.
   */
  writesFailing(): boolean;
  /** Jobs in each of `states`, each count stopping at `countCap` (a larger count reads `countCap`). */
  countJobsByState(states: readonly string[], countCap: number): Promise<Record<string, number>>;
  /**
   * Webhook deliveries not yet delivered or given up, counted up to `countCap` (a larger backlog
   * reads as `countCap`), and when the oldest of them was written (ms).
   */
  outboxBacklog(countCap: number): Promise<OutboxBacklog>;
}
