import type { SqlDriver, SqlValue } from './driver.js';
import { MAX_LIST_LIMIT } from './ledger.js';
import { int } from './rows.js';
import type { Store, UsageFilter, UsageRow } from './types.js';

export type UsageOps = Pick<Store, 'usage'>;

const DAY_MS = 86_400_000;

type Group = UsageFilter['groupBy'];

/**
 * The spend (captures and charges; holds and releases net out) in [from, to). The whole UTC days of
 * the range come from `usage_daily` (rollups.ts), a row per key, day and model: a key's month is
 * some thirty rows whatever its traffic. Only the hours at either end of a range that does not start
 * and end at midnight UTC are summed from the ledger rows themselves, off an index on time (by key,
 * by account, or migration 18's across accounts): at most two partial days, never the range. A range
 * shorter than two days may hold no whole day; it is read from the ledger alone.
 */
export function usageOps(db: SqlDriver): UsageOps {
  return {
    async usage(f) {
      const firstDay = Math.ceil(f.from / DAY_MS);
      const endDay = Math.floor(f.to / DAY_MS);
      const parts: Array<{ sql: string; params: SqlValue[] }> = [];
      if (firstDay < endDay) {
        parts.push(dailyQuery(f, firstDay, endDay));
        if (f.from < firstDay * DAY_MS) parts.push(ledgerQuery(f, f.from, firstDay * DAY_MS));
        if (endDay * DAY_MS < f.to) parts.push(ledgerQuery(f, endDay * DAY_MS, f.to));
      } else parts.push(ledgerQuery(f, f.from, f.to));

      const groups = new Map<string, { day: number; spent: number; requests: number }>();
      for (const part of parts) {
        for (const r of await db.query(part.sql, part.params)) {
          const key = String(r.grp ?? '');
          const g = groups.get(key) ?? { day: f.groupBy === 'day' ? int(r.grp) : 0, spent: 0, requests: 0 };
          g.spent += int(r.spent);
          g.requests += int(r.n);
          groups.set(key, g);
        }
      }
      return present(f.groupBy, groups);
    },
  };
}

/** Days in date order; models and keys biggest spend first, then by name. At most MAX_LIST_LIMIT rows. */
function present(groupBy: Group, groups: Map<string, { day: number; spent: number; requests: number }>): UsageRow[] {
  const rows = [...groups].map(([key, g]) => ({ key, ...g }));
  if (groupBy === 'day') rows.sort((a, b) => a.day - b.day);
  else rows.sort((a, b) => b.spent - a.spent || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return rows.slice(0, MAX_LIST_LIMIT).map((r) => ({
    group: groupBy === 'day' ? new Date(r.day * DAY_MS).toISOString().slice(0, 10) : r.key,
    spent: r.spent,
    requests: r.requests,
  }));
}

/** Whole days [firstDay, endDay) from the rollup: its primary key leads with the key, its other indexes with the account or the day. */
function dailyQuery(f: UsageFilter, firstDay: number, endDay: number): { sql: string; params: SqlValue[] } {
  const group = f.groupBy === 'day' ? 'day' : f.groupBy === 'model' ? 'model' : 'key_id';
  const where = ['day >= ?', 'day < ?'];
  const params: SqlValue[] = [firstDay, endDay];
  if (f.accountId !== undefined) (where.push('account_id = ?'), params.push(f.accountId));
  if (f.keyId !== undefined) (where.push('key_id = ?'), params.push(f.keyId));
  if (f.model !== undefined) (where.push('model = ?'), params.push(f.model));
  return { sql: `SELECT ${group} AS grp, SUM(spent) AS spent, SUM(requests) AS n FROM usage_daily WHERE ${where.join(' AND ')} GROUP BY ${group}`, params };
}

/** Ledger rows in [from, to), grouped as the rollup groups them ('' for a row without a key or model). */
function ledgerQuery(f: UsageFilter, from: number, to: number): { sql: string; params: SqlValue[] } {
  // Integer division by a day gives the UTC day number on both dialects (BIGINT / INTEGER).
  const group = f.groupBy === 'day' ? `created_at / ${DAY_MS}` : f.groupBy === 'model' ? "COALESCE(model, '')" : "COALESCE(key_id, '')";
  const where = ["kind IN ('capture', 'charge')", 'created_at >= ?', 'created_at < ?'];
  const params: SqlValue[] = [from, to];
  if (f.accountId !== undefined) (where.push('account_id = ?'), params.push(f.accountId));
  if (f.keyId !== undefined) (where.push('key_id = ?'), params.push(f.keyId));
  if (f.model !== undefined) (where.push("COALESCE(model, '') = ?"), params.push(f.model));
  return { sql: `SELECT ${group} AS grp, SUM(0 - delta) AS spent, COUNT(*) AS n FROM ledger WHERE ${where.join(' AND ')} GROUP BY ${group}`, params };
}
