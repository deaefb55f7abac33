import type { SqlDriver } from './driver.js';
import { int } from './rows.js';
import type { Store } from './types.js';

export type OperationsOps = Pick<Store, 'appliedMigrations' | 'countJobsByState' | 'outboxBacklog'>;

/** The queries behind readiness probes and state gauges: cheap, read-only, never on a request path. */
export function operationsOps(db: SqlDriver): OperationsOps {
  return {
    async appliedMigrations() {
      return (await db.query('SELECT version FROM schema_migrations ORDER BY version')).map((r) => int(r.version));
    },
    async countJobsByState() {
      const out: Record<string, number> = {};
      for (const r of await db.query('SELECT state, COUNT(*) AS n FROM jobs GROUP BY state')) out[String(r.state)] = int(r.n);
      return out;
    },
    async outboxBacklog() {
      // Served by the (state, next_attempt_at) index the dispatcher claims with.
      const [r] = await db.query(`SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM webhook_outbox WHERE state = 'pending'`);
      return { pending: int(r?.n ?? 0), oldestCreatedAt: r?.oldest === null || r?.oldest === undefined ? null : int(r.oldest) };
    },
  };
}
