import type { SqlDriver } from './driver.js';
import { int } from './rows.js';
import type { Store } from './types.js';

export type OperationsOps = Pick<Store, 'appliedMigrations' | 'canTakeWriteLock' | 'writesFailing' | 'countJobsByState' | 'outboxBacklog'>;

/** The queries behind readiness probes and state gauges: cheap, read-only, never on a request path. */
export function operationsOps(db: SqlDriver): OperationsOps {
  return {
    async appliedMigrations() {
      return (await db.query('SELECT version FROM schema_migrations ORDER BY version')).map((r) => int(r.version));
    },
    async canTakeWriteLock(maxWaitMs) {
      return db.canTakeWriteLock ? db.canTakeWriteLock(maxWaitMs) : true;
    },
    writesFailing() {
      return db.writesFailing?.() ?? false;
    },
    async countJobsByState(states, countCap) {
      // One capped count per state, each off the index (state, next_poll_at) from the state's first
      // entry: finished jobs pile up until purged, and a GROUP BY over the whole table read every one
      // of them on every scrape (test/ops/jobs-gauge.test.ts checks the plans).
      const cap = Math.max(1, Math.floor(countCap));
      const out: Record<string, number> = {};
      for (const state of states) {
        const [r] = await db.query('SELECT COUNT(*) AS n FROM (SELECT next_poll_at FROM jobs WHERE state = ? LIMIT ?) capped', [state, cap]);
        out[state] = int(r?.n ?? 0);
      }
      return out;
    },
    async outboxBacklog(countCap) {
      // Both read the index (state, created_at) from its first pending entry, and stop: a backlog of
      // millions costs a scrape `countCap` index entries and one seek (test/webhooks/backlog-gauges.test.ts).
      // The count's ORDER BY holds PostgreSQL to that index: without it, a sequential scan that stops
      // at the LIMIT looks as cheap to the planner, but reads every finished row on its way. (Its
      // choice rests on the table's statistics: one that autovacuum has not analyzed since it grew by
      // far more than 10% may have its pending rows read and sorted instead, once per scrape, until
      // it is.)
      const [counted] = await db.query(`SELECT COUNT(*) AS n FROM (SELECT created_at FROM webhook_outbox WHERE state = 'pending' ORDER BY created_at LIMIT ?) capped`, [
        Math.max(1, Math.floor(countCap)),
      ]);
      const [oldest] = await db.query(`SELECT created_at FROM webhook_outbox WHERE state = 'pending' ORDER BY created_at LIMIT 1`);
      return { pending: int(counted?.n ?? 0), oldestCreatedAt: oldest ? int(oldest.created_at) : null };
    },
  };
}
