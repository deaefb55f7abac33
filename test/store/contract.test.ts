import { afterAll, beforeAll, beforeEach, describe } from 'vitest';
import { accountCases, type Ctx } from './cases-accounts.js';
import { budgetCases } from './cases-budgets.js';
import { idempotencyCases } from './cases-idempotency.js';
import { jobCases } from './cases-jobs.js';
import { propertyCases } from './cases-property.js';
import { rollupCases } from './cases-rollups.js';
import { webhookCases } from './cases-webhooks.js';
import { postgresBackend, sqliteBackend, type Backend } from './harness.js';

/**
 * The same cases against every backend, each case on its own empty database (a fresh SQLite
 * file or a fresh PostgreSQL schema). PostgreSQL being unreachable fails every case in its
 * block: the contract is not considered proven against a backend that was never exercised.
 */
function contract(name: string, make: () => Backend): void {
  describe(`Store contract: ${name}`, () => {
    let backend: Backend;
    let current: Ctx | undefined;
    const ctx = (): Ctx => {
      if (!current) throw new Error(`${name} store did not open`);
      return current;
    };

    beforeAll(() => {
      backend = make();
    });
    beforeEach(async () => {
      current = undefined;
      current = await backend.fresh();
    });
    afterAll(async () => {
      await backend.dispose();
    });

    accountCases(ctx);
    budgetCases(ctx);
    jobCases(ctx);
    idempotencyCases(ctx);
    propertyCases(ctx);
    rollupCases(ctx);
    webhookCases(ctx);
  });
}

contract('sqlite', sqliteBackend);
contract('postgres', postgresBackend);
