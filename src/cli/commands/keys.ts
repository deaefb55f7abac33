import { KEY_LIST_MAX_LIMIT, view } from '../../admin/service.js';
import type { KeyAction } from '../../store/types.js';
import type { CliCommand } from '../command.js';
import { CONFIG_OPTION, csv, jsonArrayWriter, printJson, withAdmin, type WithConfig } from '../local.js';
import { writeOut } from '../output.js';

/** API key administration straight on the configured database (the same operations as /admin/keys). */
export const keysCommand: CliCommand = {
  register(program, run) {
    const keys = program.command('keys').description('create, list and revoke API keys');

    keys
      .command('create')
      .requiredOption('--account <name>', 'account the key spends from')
      .option('--models <globs>', "comma-separated model patterns, e.g. 'sora-*,text-embedding-*' (default: all)")
      .option('--actions <list>', 'comma-separated: video, embeddings, chat, models (default: all)')
      .option('--expires <duration>', 'lifetime such as 30d, 12h or 45m (default: never)')
      .option('--name <text>', 'a label for the key')
      .option(...CONFIG_OPTION)
      .action(
        run(async (o: WithConfig & { account: string; models?: string; actions?: string; expires?: string; name?: string }) =>
          withAdmin(o.config, async (admin) => {
            const { key, record } = await admin.createKey({
              account: o.account,
              models: csv(o.models),
              actions: csv(o.actions) as KeyAction[] | undefined,
              expires: o.expires,
              name: o.name,
            });
            printJson(view.key(record));
            // The key alone on the last line, shown this once, so scripts can take `tail -n1`.
            writeOut(`${key}\n`);
          }),
        ),
      );
    keys
      .command('list')
      .option('--account <name>', 'only this account')
      .option(...CONFIG_OPTION)
      .action(
        run(async (o: WithConfig & { account?: string }) =>
          withAdmin(o.config, async (admin) => {
            // Every key, read and printed a page at a time, so that thousands of keys are never held at once.
            const out = jsonArrayWriter();
            let after: string | undefined;
            for (;;) {
              const { keys: page, hasMore } = await admin.listKeys({ account: o.account, after, limit: KEY_LIST_MAX_LIMIT });
              for (const k of page) out.item(view.key(k));
              if (!hasMore || page.length === 0) break;
              after = page[page.length - 1]!.id;
            }
            out.end();
          }),
        ),
      );
    keys
      .command('revoke <idOrPrefix>')
      .option(...CONFIG_OPTION)
      .action(run(async (id: string, o: WithConfig) => withAdmin(o.config, async (admin) => printJson(view.key(await admin.revokeKey(id))))));
  },
};
