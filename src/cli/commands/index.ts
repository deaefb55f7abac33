import type { CliCommand } from '../command.js';
import { accountsCommand } from './accounts.js';
import { keysCommand } from './keys.js';
import { serveCommand } from './serve.js';

/**
 * Every command of the `gateway` binary, in help order. Adding a command is one module in this
 * folder and one line here.
 */
export const commands: readonly CliCommand[] = [serveCommand, accountsCommand, keysCommand];
