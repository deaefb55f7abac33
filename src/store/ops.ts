import type { SqlDriver } from './driver.js';
import { int } from './rows.js';
import type { Store } from './types.js';

export type OperationsOps = Pick<Store, 'appliedMigrations' | 'countJobsByState'>;

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
  };
}
