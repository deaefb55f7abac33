import { WebhookAdmin, webhookView } from '../../webhooks/admin.js';
import { systemClock } from '../../core/clock.js';
import type { CliCommand } from '../command.js';
import { CONFIG_OPTION, csv, localConfig, printJson, withAdmin, type WithConfig } from '../local.js';
import { writeOut } from '../output.js';

/** Runs `fn` with webhook administration over the configured store (same rules as /admin/webhooks). */
function withWebhooks<T>(configPath: string | undefined, fn: (w: WebhookAdmin) => Promise<T>): Promise<T> {
  const { cfg } = localConfig(configPath);
  return withAdmin(configPath, (admin) => fn(new WebhookAdmin(admin, admin.store, systemClock, cfg.webhooks.allow_private_networks)));
}

/** `gateway webhooks add | list | disable | deliveries`. */
export const webhooksCommand: CliCommand = {
  register(program, run) {
    const hooks = program.command('webhooks').description('register webhook endpoints and read their delivery log');
    hooks
      .command('add')
      .requiredOption('--account <name>', 'account whose video events are sent')
      .requiredOption('--url <url>', 'https URL that receives the events')
      .option('--events <list>', 'comma-separated: video.completed, video.failed, video.cancelled (default: all)')
      .option(...CONFIG_OPTION)
      .action(
        run(async (o: WithConfig & { account: string; url: string; events?: string }) =>
          withWebhooks(o.config, async (w) => {
            const e = await w.register({ account: o.account, url: o.url, events: csv(o.events) });
            printJson(webhookView.endpoint(e));
            // The secret alone on the last line, shown this once.
            writeOut(`${e.secret}\n`);
          }),
        ),
      );
    hooks
      .command('list')
      .option('--account <name>', 'only this account')
      .option(...CONFIG_OPTION)
      .action(run(async (o: WithConfig & { account?: string }) => withWebhooks(o.config, async (w) => printJson((await w.list(o.account)).map((e) => webhookView.endpoint(e))))));
    hooks
      .command('disable <id>')
      .option(...CONFIG_OPTION)
      .action(run(async (id: string, o: WithConfig) => withWebhooks(o.config, async (w) => printJson(webhookView.endpoint(await w.disable(id))))));
    hooks
      .command('deliveries <id>')
      .option(...CONFIG_OPTION)
      .action(
        run(async (id: string, o: WithConfig) =>
          withWebhooks(o.config, async (w) => {
            const log = await w.deliveries(id);
            printJson({ data: log.events.map(webhookView.event), attempts: log.attempts.map(webhookView.attempt) });
          }),
        ),
      );
  },
};
