import type { JsonObject } from '../core/json.js';
import { errors } from '../core/errors.js';
import { isMicros } from '../core/money.js';
import { boundVendorData, VENDOR_DATA_MAX_BYTES } from '../core/vendor-data.js';
import type { Row } from './driver.js';
import type { Account, ApiKeyRecord, BudgetPeriod, KeyBudget, KeyAction, LedgerEntry, LedgerKind, RateLimits } from './types.js';
import type { JobRecord, JobState, ReconcileRecord } from './job-types.js';

/**
 * Row <-> record conversion. Integer columns arrive as BigInt (SQLite, safe-integer mode) or as
 * strings (PostgreSQL int8); both are checked to fit a JS number exactly.
 */
export function int(v: unknown): number {
  const n = typeof v === 'bigint' ? Number(v) : typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || (typeof v === 'bigint' && BigInt(n) !== v)) {
    throw errors.internal(`Stored integer out of range: ${String(v)}`);
  }
  return n;
}

export function intOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : int(v);
}

/** DOUBLE PRECISION columns; SQLite may hand back an integral REAL as BigInt in safe-integer mode. */
export function num(v: unknown): number {
  return typeof v === 'bigint' ? int(v) : Number(v);
}

export function numOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : num(v);
}

function str(v: unknown): string {
  return String(v);
}

function strOrNull(v: unknown): string | null {
  return v === null || v === undefined ? null : String(v);
}

function parse<T>(v: unknown): T {
  return JSON.parse(String(v)) as T;
}

/**
 * A job's vendor_data as stored. Rows written before polls were bounded can hold megabytes; those
 * are bounded here, once per read, instead of on every presentation. The text's length decides
 * cheaply: it cannot be over the bound in UTF-8 bytes unless 3 bytes a character could be.
 */
function storedVendorData(v: unknown): JsonObject {
  const text = String(v);
  const data = JSON.parse(text) as JsonObject;
  return text.length * 3 > VENDOR_DATA_MAX_BYTES ? boundVendorData(data) : data;
}

function parseOrNull<T>(v: unknown): T | null {
  return v === null || v === undefined ? null : parse<T>(v);
}

/** JSON column value for binding; undefined/null become SQL NULL. */
export function json(v: unknown): string | null {
  return v === null || v === undefined ? null : JSON.stringify(v);
}

/** Rejects amounts that are not whole micros before they reach a BIGINT column. */
export function assertMicros(param: string, v: number, min = 0): void {
  if (!isMicros(v, min)) {
    throw errors.invalidRequest(`${param} must be an integer number of micros >= ${min}.`, param);
  }
}

export function toAccount(r: Row): Account {
  return {
    id: str(r.id),
    name: str(r.name),
    balance: int(r.balance),
    upstreams: parseOrNull<string[]>(r.upstreams),
    limits: parse<RateLimits>(r.limits),
    createdAt: int(r.created_at),
  };
}

export function toKey(r: Row): ApiKeyRecord {
  return {
    id: str(r.id),
    accountId: str(r.account_id),
    hash: str(r.hash),
    prefix: str(r.prefix),
    name: strOrNull(r.name),
    models: parse<string[]>(r.models),
    actions: parse<KeyAction[]>(r.actions),
    limits: parse<RateLimits>(r.limits),
    expiresAt: intOrNull(r.expires_at),
    revokedAt: intOrNull(r.revoked_at),
    lastUsedAt: intOrNull(r.last_used_at),
    createdAt: int(r.created_at),
    budget: toBudget(r),
  };
}

function toBudget(r: Row): KeyBudget | null {
  const total = intOrNull(r.budget_total);
  const periodLimit = intOrNull(r.budget_period_limit);
  const period = strOrNull(r.budget_period) as BudgetPeriod | null;
  if (total === null && (period === null || periodLimit === null)) return null;
  return { total, period, periodLimit };
}

export function toEntry(r: Row): LedgerEntry {
  return {
    id: int(r.id),
    accountId: str(r.account_id),
    kind: str(r.kind) as LedgerKind,
    delta: int(r.delta),
    ref: str(r.ref),
    note: strOrNull(r.note),
    createdAt: int(r.created_at),
    keyId: strOrNull(r.key_id),
    model: strOrNull(r.model),
    upstream: strOrNull(r.upstream),
  };
}

export function toJob(r: Row): JobRecord {
  return {
    id: str(r.id),
    accountId: str(r.account_id),
    keyId: str(r.key_id),
    model: str(r.model),
    vendor: str(r.vendor),
    upstream: strOrNull(r.upstream),
    taskId: strOrNull(r.task_id),
    publicId: strOrNull(r.public_id),
    state: str(r.state) as JobState,
    estSeconds: num(r.est_seconds),
    holdMicros: int(r.hold_micros),
    pricePerSecondMicros: int(r.price_per_second_micros),
    seconds: numOrNull(r.seconds),
    billableSeconds: numOrNull(r.billable_seconds),
    costMicros: intOrNull(r.cost_micros),
    errorCode: strOrNull(r.error_code),
    errorMessage: strOrNull(r.error_message),
    request: parse<JsonObject>(r.request),
    taskMeta: parse<JsonObject>(r.task_meta),
    vendorData: storedVendorData(r.vendor_data),
    outputs: parse<JsonObject[]>(r.outputs),
    usage: parseOrNull<JsonObject>(r.usage),
    progress: numOrNull(r.progress),
    createdAt: int(r.created_at),
    updatedAt: int(r.updated_at),
    completedAt: intOrNull(r.completed_at),
    nextPollAt: int(r.next_poll_at),
    leaseUntil: intOrNull(r.lease_until),
    deadlineAt: int(r.deadline_at),
    requestId: strOrNull(r.request_id),
    webhookUrl: strOrNull(r.webhook_url),
    callbackToken: strOrNull(r.callback_token),
    dialect: r.dialect === 'openai' ? 'openai' : 'spec',
    phase: r.phase === 'queued' || r.phase === 'running' ? r.phase : null,
    remixedFrom: strOrNull(r.remixed_from),
    deletedAt: intOrNull(r.deleted_at),
    uploads: r.uploads === undefined || r.uploads === null ? [] : parse<string[]>(r.uploads),
    purgeAt: intOrNull(r.purge_at),
  };
}

export function toReconcile(r: Row): ReconcileRecord {
  return {
    id: int(r.id),
    jobId: str(r.job_id),
    upstream: str(r.upstream),
    reason: str(r.reason),
    createdAt: int(r.created_at),
  };
}
