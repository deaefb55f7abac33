import { view, type BudgetInput } from '../../admin/service.js';
import { adminUsage } from '../../routes/usage.js';
import type { CliCommand } from '../command.js';
import { CONFIG_OPTION, printJson, withAdmin, type WithConfig } from '../local.js';
import { writeOut } from '../output.js';

/** `gateway usage` (the admin report) and `gateway budget` (a key's budget), straight on the configured database. */
export const spendCommand: CliCommand = {
  register(program, run) {
    program
      .command('usage')
      .description('spend report from the ledger (same as GET /admin/usage)')
      .option('--account <name>', 'only this account')
      .option('--key <idOrPrefix>', 'only this key')
      .option('--model <name>', 'only this model')
      .option('--from <date>', 'start (YYYY-MM-DD or ISO 8601; default: start of this UTC month)')
      .option('--to <date>', 'end (a date includes that day; default: end of today)')
      .option('--group-by <what>', 'day, model or key', 'model')
      .option('--csv', 'CSV instead of JSON')
      .option(...CONFIG_OPTION)
      .action(
        run(async (o: WithConfig & { account?: string; key?: string; model?: string; from?: string; to?: string; groupBy: string; csv?: boolean }) =>
          withAdmin(o.config, async (admin) => {
            const report = await adminUsage(admin, admin.store, { ...o, group_by: o.groupBy }, Date.now());
            if (o.csv) writeOut(report.csv());
            else printJson(report.json);
          }),
        ),
      );

    program
      .command('budget <keyIdOrPrefix>')
      .description("set or clear an API key's budget (amounts in currency units)")
      .option('--total <amount>', 'lifetime cap')
      .option('--period <day|month>', 'reset the period cap every UTC day or month')
      .option('--period-limit <amount>', 'cap per period')
      .option('--clear', 'remove the budget')
      .option(...CONFIG_OPTION)
      .action(
        run(async (id: string, o: WithConfig & { total?: string; period?: 'day' | 'month'; periodLimit?: string; clear?: boolean }) =>
          withAdmin(o.config, async (admin) => {
            const input: BudgetInput | null = o.clear ? null : { total: o.total, period: o.period, period_limit: o.periodLimit };
            printJson(view.key(await admin.setKeyBudget(id, input)));
          }),
        ),
      );
  },
};
