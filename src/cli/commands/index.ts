import type { CliCommand } from '../command.js';
import { accountsCommand } from './accounts.js';
import { checkCommand } from './check.js';
import { embedCommand } from './embed.js';
import { initCommand } from './init.js';
import { keysCommand } from './keys.js';
import { modelsCommand } from './models.js';
import { serveCommand } from './serve.js';
import { spendCommand } from './spend.js';
import { videoCommand } from './video.js';
import { webhooksCommand } from './webhooks.js';

/**
 * Every command of the `gateway` binary, in help order. Adding a command is one module in this
 * folder and one line here.
 */
export const commands: readonly CliCommand[] = [
  serveCommand,
  initCommand,
  checkCommand,
  videoCommand,
  embedCommand,
  modelsCommand,
  accountsCommand,
  keysCommand,
  spendCommand,
  webhooksCommand,
];
