import { loadConfigFile, validateConfig } from './config/load.js';
import type { ConfigFile } from './config/schema.js';
import { AdminService, view } from './admin/service.js';
import { systemClock } from './core/clock.js';
import { isGatewayError } from './core/errors.js';
import { formatMicros } from './core/money.js';
import { openStore } from './store/index.js';
import { flag, list, parseArgs, type Args } from './cli/args.js';
import { serve } from './serve.js';
import type { KeyAction } from './store/types.js';

const USAGE = `usage: gateway <command>
  serve [--config PATH] [--host H] [--port N]     run the gateway (no config: the embedded demo default)
  accounts create NAME [--balance AMOUNT] [--upstreams a,b]
  accounts list | show NAME | topup NAME AMOUNT [--note TEXT] | ledger NAME [--limit N]
  keys create --account NAME [--models 'glob,...'] [--actions video,embeddings,chat,models] [--expires 30d] [--name TEXT]
  keys list [--account NAME] | revoke ID_OR_PREFIX
Config: --config PATH or GATEWAY_CONFIG; without one the embedded default (./data) is used.`;

function configFor(args: Args): { cfg: ConfigFile; path: string | undefined } {
  const path = flag(args, 'config') ?? process.env.GATEWAY_CONFIG;
  if (path) return { cfg: loadConfigFile(path), path };
  return { cfg: validateConfig({}, '(embedded default)'), path: undefined };
}

const print = (v: unknown) => process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);

/** CLI entry; returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  const [cmd, sub, ...rest] = args.positional;
  try {
    if (!cmd || cmd === 'help' || args.flags.has('help')) {
      process.stdout.write(`${USAGE}\n`);
      return cmd ? 0 : 2;
    }
    if (cmd === 'serve') {
      const { path } = configFor(args);
      await serve({ configPath: path, host: flag(args, 'host'), port: flag(args, 'port') });
      return 0;
    }
    if (cmd !== 'accounts' && cmd !== 'keys') throw new Error(`unknown command '${cmd}'\n${USAGE}`);
    const { cfg } = configFor(args);
    const store = await openStore(cfg.database, { dataDir: cfg.data_dir });
    try {
      const admin = new AdminService(store, undefined, systemClock);
      return await (cmd === 'accounts' ? accounts(admin, sub, rest, args) : keys(admin, sub, rest, args));
    } finally {
      await store.close();
    }
  } catch (e) {
    const msg = isGatewayError(e) ? `${e.message}${e.param ? ` (${e.param})` : ''}` : (e as Error).message;
    process.stderr.write(`error: ${msg}\n`);
    return isGatewayError(e) && e.status < 500 ? 2 : 1;
  }
}

async function accounts(admin: AdminService, sub: string | undefined, rest: string[], args: Args): Promise<number> {
  switch (sub) {
    case 'create': {
      if (!rest[0]) throw new Error('accounts create needs a NAME');
      const ups = list(flag(args, 'upstreams'));
      print(view.account(await admin.createAccount(rest[0], { balance: flag(args, 'balance'), upstreams: ups ?? null })));
      return 0;
    }
    case 'list':
      print((await admin.listAccounts()).map(view.account));
      return 0;
    case 'show':
      if (!rest[0]) throw new Error('accounts show needs a NAME');
      print(view.account(await admin.account(rest[0])));
      return 0;
    case 'topup': {
      if (!rest[0] || !rest[1]) throw new Error('accounts topup needs NAME AMOUNT');
      const a = await admin.topUp(rest[0], rest[1], flag(args, 'note'));
      print(view.account(a));
      process.stderr.write(`balance is now ${formatMicros(a.balance)}\n`);
      return 0;
    }
    case 'ledger':
      if (!rest[0]) throw new Error('accounts ledger needs a NAME');
      print((await admin.ledger(rest[0], Number(flag(args, 'limit') ?? 100))).map(view.entry));
      return 0;
  }
  throw new Error(`unknown accounts command '${sub ?? ''}'`);
}

async function keys(admin: AdminService, sub: string | undefined, rest: string[], args: Args): Promise<number> {
  switch (sub) {
    case 'create': {
      const account = flag(args, 'account');
      if (!account) throw new Error('keys create needs --account NAME');
      const { key, record } = await admin.createKey({
        account,
        models: list(flag(args, 'models')),
        actions: list(flag(args, 'actions')) as KeyAction[] | undefined,
        expires: flag(args, 'expires'),
        name: flag(args, 'name'),
      });
      print(view.key(record));
      // The key alone on the last line, shown this once, so scripts can take `tail -n1`.
      process.stdout.write(`${key}\n`);
      return 0;
    }
    case 'list':
      print((await admin.listKeys(flag(args, 'account'))).map(view.key));
      return 0;
    case 'revoke':
      if (!rest[0]) throw new Error('keys revoke needs an ID or PREFIX');
      print(view.key(await admin.revokeKey(rest[0])));
      return 0;
  }
  throw new Error(`unknown keys command '${sub ?? ''}'`);
}
