import { errors } from '../core/errors.js';
import { queryTime } from '../core/query-time.js';
import { formatMicros } from '../core/money.js';
import { costUnits } from '../billing/usage-cost.js';
import type { Account, ApiKeyRecord, Store, UsageFilter, UsageRow } from '../store/types.js';

const DAY_MS = 86_400_000;
/** Longest range one report may cover (bounded work per request). */
const MAX_RANGE_DAYS = 366;

/**
 * A report's range [from, to): `from` defaults to the start of the current UTC month, `to` to the end
 * of today; a bare date as `to` includes that whole day.
 */
export function parseRange(q: { from?: unknown; to?: unknown }, now: number): { from: number; to: number } {
  const d = new Date(now);
  const from = queryTime(q.from, 'from') ?? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const to = queryTime(q.to, 'to', true) ?? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) + DAY_MS;
  if (to <= from) throw errors.invalidRequest("'to' must be after 'from'.", 'to');
  if (to - from > MAX_RANGE_DAYS * DAY_MS) throw errors.invalidRequest(`A report covers at most ${MAX_RANGE_DAYS} days.`, 'from');
  return { from, to };
}

export function parseGroupBy(v: unknown): UsageFilter['groupBy'] {
  if (v === undefined || v === '') return 'model';
  if (v === 'day' || v === 'model' || v === 'key') return v;
  throw errors.invalidRequest("'group_by' must be day, model or key.", 'group_by');
}

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());

/** A report row as the API and CLI show it. */
export function presentRow(groupBy: UsageFilter['groupBy'], r: UsageRow) {
  return { [groupBy]: r.group, cost: costUnits(r.spent), cost_micros: r.spent, requests: r.requests };
}

/** CSV with a header line; values never contain commas except model names, which are quoted when needed. */
export function toCsv(groupBy: UsageFilter['groupBy'], rows: UsageRow[]): string {
  const cell = (s: string) => (/[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
  const lines = [`${groupBy},cost,cost_micros,requests`];
  for (const r of rows) lines.push([cell(r.group), formatMicros(r.spent), String(r.spent), String(r.requests)].join(','));
  return `${lines.join('\n')}\n`;
}

/**
 * What `GET /v1/usage` tells the calling key. The money fields follow OpenRouter's `GET /api/v1/key`
 * (`limit`, `usage`, `limit_remaining`, `limit_reset`, currency units, null when there is no limit),
 * the most widely copied self-service shape among OpenAI-compatible gateways; the balance, the period
 * window and the spend by model for a date range are this gateway's additions.
 */
export async function keyUsage(
  store: Pick<Store, 'keySpend' | 'usage' | 'getAccount' | 'getKey'>,
  cachedAccount: Account,
  cachedKey: ApiKeyRecord,
  query: { from?: unknown; to?: unknown },
  now: number,
) {
  const range = parseRange(query, now);
  // The authenticated records may be a few seconds old: balance and budget are read fresh.
  const account = (await store.getAccount(cachedAccount.id)) ?? cachedAccount;
  const key = (await store.getKey(cachedKey.id)) ?? cachedKey;
  const spend = await store.keySpend(key.id, now);
  // By the key alone (its rows are all its account's): with the account too, a planner may walk the
  // account's whole ledger by time instead of the key's own rows.
  const rows = await store.usage({ keyId: key.id, from: range.from, to: range.to, groupBy: 'model' });
  const days = await store.usage({ keyId: key.id, from: range.from, to: range.to, groupBy: 'day' });
  const b = key.budget ?? null;
  // The binding cap is whichever leaves less: the lifetime cap or the current period's.
  const remaining = [
    b?.total !== null && b?.total !== undefined ? b.total - spend.total : null,
    b?.periodLimit !== null && b?.periodLimit !== undefined ? b.periodLimit - spend.period : null,
  ].filter((v): v is number => v !== null);
  return {
    object: 'key_usage',
    data: {
      key: { id: key.id, prefix: key.prefix, name: key.name },
      balance: costUnits(account.balance),
      limit: b?.total !== null && b?.total !== undefined ? costUnits(b.total) : null,
      usage: costUnits(spend.total),
      limit_remaining: remaining.length ? costUnits(Math.max(0, Math.min(...remaining))) : null,
      limit_reset: b?.period === 'day' ? 'daily' : b?.period === 'month' ? 'monthly' : null,
      period:
        b?.period && b.periodLimit !== null
          ? { period: b.period, limit: costUnits(b.periodLimit), usage: costUnits(spend.period), start: iso(spend.periodStart), end: iso(spend.periodEnd) }
          : null,
      range: { from: iso(range.from), to: iso(range.to) },
      by_model: rows.map((r) => ({ model: r.group, cost: costUnits(r.spent), requests: r.requests })),
      by_day: days.map((r) => ({ day: r.group, cost: costUnits(r.spent), requests: r.requests })),
    },
  };
}
