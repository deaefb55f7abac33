import type { Command } from 'commander';
import { CliError, EXIT } from '../exit.js';
import { ApiClient } from './api.js';
import { clientTiming } from './timing.js';

export interface ClientFlags {
  url?: string;
  key?: string;
  json?: boolean;
}

/** The flags every client command takes: where the gateway is, the key, and machine output. */
export function clientOptions(cmd: Command): Command {
  return cmd
    .option('--url <url>', 'gateway base URL (or GATEWAY_URL; default http://127.0.0.1:8080)')
    .option('--key <key>', 'API key (or GATEWAY_API_KEY)')
    .option('--json', 'machine output: one JSON document on stdout');
}

export function apiClient(flags: ClientFlags): ApiClient {
  const url = flags.url ?? process.env.GATEWAY_URL ?? 'http://127.0.0.1:8080';
  const key = flags.key ?? process.env.GATEWAY_API_KEY;
  if (!key) throw new CliError('no API key: pass --key or set GATEWAY_API_KEY', EXIT.usage);
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
  } catch {
    throw new CliError(`'${url}' is not an http(s) URL (--url or GATEWAY_URL)`, EXIT.usage);
  }
  return new ApiClient(url, key, clientTiming());
}

export { printJson } from '../output.js';
