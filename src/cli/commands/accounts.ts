import { view } from '../../admin/service.js';
import { formatMicros } from '../../core/money.js';
import type { CliCommand } from '../command.js';
import { CONFIG_OPTION, csv, printJson, withAdmin, type WithConfig } from '../local.js';

/** Account administration straight on the configured database (the same operations as /admin/accounts). */
export const accountsCommand: CliCommand = {
  register(program, run) {
    const accounts = program.command('accounts').description('create, list, show, top up accounts and read their ledger');

    accounts
      .command('create <name>')
      .option('--balance <amount>', 'opening balance in currency units')
      .option('--upstreams <list>', 'comma-separated upstream names the account may use (default: all)')
      .option(...CONFIG_OPTION)
      .action(
        run(async (name: string, o: WithConfig & { balance?: string; upstreams?: string }) =>
          withAdmin(o.config, async (admin) => {
            printJson(view.account(await admin.createAccount(name, { balance: o.balance, upstreams: csv(o.upstreams) ?? null })));
          }),
        ),
      );
    accounts
      .command('list')
      .option(...CONFIG_OPTION)
      .action(run(async (o: WithConfig) => withAdmin(o.config, async (admin) => printJson((await admin.listAccounts()).map(view.account)))));
    accounts
      .command('show <name>')
      .option(...CONFIG_OPTION)
      .action(run(async (name: string, o: WithConfig) => withAdmin(o.config, async (admin) => printJson(view.account(await admin.account(name))))));
    accounts
      .command('topup <name> <amount>')
      .option('--note <text>', 'note kept on the ledger entry')
      .option(...CONFIG_OPTION)
      .action(
        run(async (name: string, amount: string, o: WithConfig & { note?: string }) =>
          withAdmin(o.config, async (admin) => {
            const a = await admin.topUp(name, amount, o.note);
            printJson(view.account(a));
            process.stderr.write(`balance is now ${formatMicros(a.balance)}\n`);
          }),
        ),
      );
    accounts
      .command('ledger <name>')
      .option('--limit <n>', 'newest entries to show', '100')
      .option(...CONFIG_OPTION)
      .action(
        run(async (name: string, o: WithConfig & { limit: string }) =>
          withAdmin(o.config, async (admin) => printJson((await admin.ledger(name, { limit: Number(o.limit) || 100 })).map(view.entry))),
        ),
      );
  },
};
