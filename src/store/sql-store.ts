import { accountOps } from './accounts.js';
import { budgetOps } from './budgets.js';
import type { SqlDriver } from './driver.js';
import { jobReadOps } from './job-reads.js';
import { jobOps } from './jobs.js';
import { keyOps } from './keys.js';
import { ledgerOps } from './ledger.js';
import { migrate } from './migrate.js';
import { operationsOps } from './ops.js';
import { tracedTransactions } from './traced.js';
import type { Store } from './types.js';
import { webhookOps } from './webhooks.js';
import { fileOps } from './files.js';
import { idempotencyOps } from './idempotency.js';
import { usageOps } from './usage-report.js';

/** A Store plus the driver under it (for tooling and tests that need raw SQL). */
export interface SqlStore extends Store {
  readonly driver: SqlDriver;
}

/**
 * The one Store implementation: every method is plain SQL over `SqlDriver`, so SQLite and
 * PostgreSQL share the same code and the same contract tests.
 */
export function createSqlStore(raw: SqlDriver): SqlStore {
  const driver = tracedTransactions(raw);
  return {
    kind: driver.dialect,
    driver,
    async migrate(opts) {
      await migrate(driver, undefined, opts);
    },
    close: () => driver.close(),
    ...accountOps(driver),
    ...keyOps(driver),
    ...ledgerOps(driver),
    ...usageOps(driver),
    ...jobOps(driver),
    ...jobReadOps(driver),
    ...budgetOps(driver),
    ...webhookOps(driver),
    ...fileOps(driver),
    ...idempotencyOps(driver),
    ...operationsOps(driver),
  };
}
