import type { Dialect, SqlExecutor } from './driver.js';
import { IDEMPOTENCY_SCHEMA } from './idempotency.js';
import { backfillStep, rollupSchema } from './rollups.js';

/**
 * Versioned schema changes. A migration, once released, is never edited: add a new one.
 * The DDL is written once; `Types` carries the few spellings the two dialects disagree on.
 * JSON is stored as TEXT on both so values round-trip byte for byte (JSONB would reorder keys
 * and refuse \u0000), and timestamps are integer unix milliseconds.
 */
export interface Types {
  /** Auto-increment 64-bit primary key. */
  serialKey: string;
}

export const TYPES: Record<Dialect, Types> = {
  sqlite: { serialKey: 'INTEGER PRIMARY KEY AUTOINCREMENT' },
  postgres: { serialKey: 'BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY' },
};

/**
 * One index on a table that may already hold many rows. PostgreSQL builds it with CREATE INDEX
 * CONCURRENTLY, outside any transaction, so that writes to the table go on while it builds (a plain
 * CREATE INDEX keeps them waiting for the whole build); SQLite builds it in the migration's
 * transaction like any other step. See migrate.ts.
 */
export interface IndexBuild {
  name: string;
  table: string;
  /** The column list, as written between the parentheses. */
  columns: string;
}

/**
 * Rows written before a migration that a structure it added must also take in. On PostgreSQL a
 * database with data runs the steps one transaction each, so that writes go on between them; the
 * step that finds nothing left is recorded in its own transaction, so a start cut off part way
 * carries on where it stopped. Elsewhere every step runs in the migration's transaction. See migrate.ts.
 */
export interface Backfill {
  /** Takes in the next part of what is left; true once nothing was (and its bookkeeping is gone). */
  step(tx: SqlExecutor, dialect: Dialect): Promise<boolean>;
}

interface Versioned {
  version: number;
  name: string;
}

/** `sql` gets the dialect too, for the statements that have no common spelling (a trigger). */
export type Migration = Versioned & ({ sql(t: Types, dialect: Dialect): string } | { index: IndexBuild } | { backfill: Backfill });

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'accounts, keys, ledger, jobs, reconcile',
    sql: (t) => `
CREATE TABLE accounts (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  balance BIGINT NOT NULL,
  upstreams TEXT,
  limits TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX accounts_name ON accounts (name);

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  hash TEXT NOT NULL,
  prefix TEXT NOT NULL,
  name TEXT,
  models TEXT NOT NULL,
  actions TEXT NOT NULL,
  limits TEXT NOT NULL,
  expires_at BIGINT,
  revoked_at BIGINT,
  last_used_at BIGINT,
  created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX api_keys_hash ON api_keys (hash);
CREATE INDEX api_keys_account ON api_keys (account_id);

CREATE TABLE ledger (
  id ${t.serialKey},
  account_id TEXT NOT NULL REFERENCES accounts (id),
  kind TEXT NOT NULL CHECK (kind IN ('credit', 'hold', 'release', 'capture', 'charge')),
  delta BIGINT NOT NULL,
  ref TEXT NOT NULL,
  note TEXT,
  created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX ledger_ref_kind ON ledger (ref, kind);
CREATE INDEX ledger_account ON ledger (account_id, id);

CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  key_id TEXT NOT NULL,
  model TEXT NOT NULL,
  vendor TEXT NOT NULL,
  upstream TEXT,
  task_id TEXT,
  public_id TEXT,
  state TEXT NOT NULL CHECK (state IN ('submitting', 'processing', 'completed', 'failed', 'rejected')),
  est_seconds DOUBLE PRECISION NOT NULL,
  hold_micros BIGINT NOT NULL,
  price_per_second_micros BIGINT NOT NULL,
  seconds DOUBLE PRECISION,
  billable_seconds DOUBLE PRECISION,
  cost_micros BIGINT,
  error_code TEXT,
  error_message TEXT,
  request TEXT NOT NULL,
  task_meta TEXT NOT NULL,
  vendor_data TEXT NOT NULL,
  outputs TEXT NOT NULL,
  usage TEXT,
  progress DOUBLE PRECISION,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  completed_at BIGINT,
  next_poll_at BIGINT NOT NULL,
  lease_until BIGINT,
  deadline_at BIGINT NOT NULL
);
CREATE INDEX jobs_due ON jobs (state, next_poll_at);
CREATE INDEX jobs_deadline ON jobs (state, deadline_at);
CREATE INDEX jobs_account ON jobs (account_id, created_at);

CREATE TABLE reconcile (
  id ${t.serialKey},
  job_id TEXT NOT NULL,
  upstream TEXT NOT NULL,
  reason TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX reconcile_job ON reconcile (job_id);
`,
  },
  {
    version: 2,
    name: 'video dialects, list index, deletion, uploads',
    // One column per ALTER: SQLite adds a single column per statement.
    sql: () => `
ALTER TABLE jobs ADD COLUMN dialect TEXT NOT NULL DEFAULT 'spec';
ALTER TABLE jobs ADD COLUMN phase TEXT;
ALTER TABLE jobs ADD COLUMN remixed_from TEXT;
ALTER TABLE jobs ADD COLUMN deleted_at BIGINT;
ALTER TABLE jobs ADD COLUMN uploads TEXT NOT NULL DEFAULT '[]';
ALTER TABLE jobs ADD COLUMN purge_at BIGINT;
CREATE INDEX jobs_account_list ON jobs (account_id, created_at, id);
DROP INDEX jobs_account;
CREATE INDEX jobs_purge ON jobs (purge_at);
`,
  },
  {
    version: 3,
    name: 'spend by key, key budgets, webhooks and their outbox, vendor callback tokens',
    sql: (t) => `
ALTER TABLE ledger ADD COLUMN key_id TEXT;
ALTER TABLE ledger ADD COLUMN model TEXT;
ALTER TABLE ledger ADD COLUMN upstream TEXT;
CREATE INDEX ledger_key_time ON ledger (key_id, created_at);
CREATE INDEX ledger_account_time ON ledger (account_id, created_at);

ALTER TABLE api_keys ADD COLUMN budget_total BIGINT;
ALTER TABLE api_keys ADD COLUMN budget_period TEXT;
ALTER TABLE api_keys ADD COLUMN budget_period_limit BIGINT;

CREATE TABLE key_spend (
  key_id TEXT NOT NULL,
  period TEXT NOT NULL,
  spent BIGINT NOT NULL,
  PRIMARY KEY (key_id, period)
);

ALTER TABLE jobs ADD COLUMN webhook_url TEXT;
ALTER TABLE jobs ADD COLUMN callback_token TEXT;
CREATE UNIQUE INDEX jobs_callback_token ON jobs (callback_token);

CREATE TABLE webhook_endpoints (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  secret TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  disabled_at BIGINT
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id);

CREATE TABLE webhook_outbox (
  id TEXT PRIMARY KEY,
  event_id TEXT NOT NULL,
  account_id TEXT NOT NULL,
  endpoint_id TEXT,
  url TEXT NOT NULL,
  event_type TEXT NOT NULL,
  payload TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts INTEGER NOT NULL,
  next_attempt_at BIGINT NOT NULL,
  lease_until BIGINT,
  created_at BIGINT NOT NULL,
  delivered_at BIGINT
);
CREATE INDEX webhook_outbox_due ON webhook_outbox (state, next_attempt_at);
CREATE INDEX webhook_outbox_endpoint ON webhook_outbox (endpoint_id, created_at);

CREATE TABLE webhook_attempts (
  id ${t.serialKey},
  outbox_id TEXT NOT NULL,
  endpoint_id TEXT,
  attempt INTEGER NOT NULL,
  status INTEGER,
  error TEXT,
  latency_ms INTEGER NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, id);
CREATE INDEX webhook_attempts_outbox ON webhook_attempts (outbox_id, id);
`,
  },
  {
    version: 4,
    name: 'the request id a job was created under',
    sql: () => `ALTER TABLE jobs ADD COLUMN request_id TEXT;`,
  },
  {
    version: 6,
    name: 'jobs across accounts by time (the operator job list)',
    sql: () => `CREATE INDEX jobs_created_list ON jobs (created_at, id);`,
  },
  {
    version: 7,
    name: 'files uploaded through the OpenAI Files API',
    sql: () => `
CREATE TABLE files (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  purpose TEXT NOT NULL,
  filename TEXT NOT NULL,
  bytes BIGINT NOT NULL,
  mime TEXT NOT NULL,
  blob TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX files_account_list ON files (account_id, created_at, id);
CREATE INDEX files_expiry ON files (expires_at);
`,
  },
  {
    version: 8,
    name: "webhook claims: each account's pending deliveries in due order",
    // The dispatcher's claim walks this per account (webhook-due.ts) instead of sorting every due
    // row. `state` leads, not a partial index's WHERE, so that SQLite picks it without statistics
    // (the store never runs ANALYZE) over webhook_outbox_due, which purging still uses. First released
    // as a plain CREATE INDEX; the index is the same, but PostgreSQL now builds it without holding
    // up outbox writes (IndexBuild).
    index: { name: 'webhook_outbox_account_due', table: 'webhook_outbox', columns: 'state, account_id, next_attempt_at, id' },
  },
  {
    version: 9,
    name: 'the outbox backlog gauges: pending deliveries by age',
    // The oldest pending delivery is this index's first pending entry, where MIN(created_at) over
    // the other indexes read every pending row on each /metrics scrape (store/ops.ts).
    index: { name: 'webhook_outbox_pending_age', table: 'webhook_outbox', columns: 'state, created_at' },
  },
  {
    version: 10,
    name: "a key's jobs by time (its spend for GET /v1/usage and its budget's windows)",
    // Without it the sum of a key's jobs walked every job of every account by time.
    index: { name: 'jobs_key_time', table: 'jobs', columns: 'key_id, created_at' },
  },
  {
    version: 11,
    name: "an account's jobs of one state by time (GET /v1/videos?status=)",
    // The list by state walked the account's every job and kept those of the state.
    index: { name: 'jobs_account_state_list', table: 'jobs', columns: 'account_id, state, created_at, id' },
  },
  {
    version: 12,
    name: "an account's jobs of one model by time (GET /v1/videos?model=)",
    index: { name: 'jobs_account_model_list', table: 'jobs', columns: 'account_id, model, created_at, id' },
  },
  {
    version: 13,
    name: 'keys by time (pages of GET /admin/keys)',
    // Without it each page read and sorted every key.
    index: { name: 'api_keys_list', table: 'api_keys', columns: 'created_at, id' },
  },
  {
    version: 14,
    name: "an account's keys by time (pages of GET /admin/keys?account=)",
    index: { name: 'api_keys_account_list', table: 'api_keys', columns: 'account_id, created_at, id' },
  },
  {
    version: 15,
    name: 'keys by display prefix (revoking a key or reading its usage by prefix)',
    // Finding a key by its prefix read every key.
    index: { name: 'api_keys_prefix', table: 'api_keys', columns: 'prefix' },
  },
  {
    version: 16,
    name: "running totals of the ledger: each key's spend, and spend per key, UTC day and model (rollups.ts)",
    // GET /v1/usage summed the key's every ledger row on each call, and the usage reports every row
    // of their range. The totals count the rows written from here on; migration 17 adds the others.
    sql: (_t, dialect) => rollupSchema(dialect),
  },
  {
    version: 17,
    name: 'the ledger rows written before migration 16, added to its totals',
    backfill: { step: (tx, dialect) => backfillStep(tx, dialect) },
  },
  {
    version: 18,
    name: 'the ledger by time (the usage reports across accounts, for the hours at either end of their range)',
    // A report's whole days come from usage_daily (migration 16); a range that starts or ends
    // within a day reads the ledger rows of those hours, which without it meant every ledger row.
    index: { name: 'ledger_time', table: 'ledger', columns: 'created_at' },
  },
  {
    version: 19,
    name: 'Idempotency-Key records of the requests that create jobs (video/idempotency.ts)',
    sql: () => IDEMPOTENCY_SCHEMA,
  },
];
