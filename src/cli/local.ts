import type { AdminService } from '../admin/service.js';
import { loadConfigFile, validateConfig } from '../config/load.js';
import type { ConfigFile } from '../config/schema.js';
import { writeOut } from './output.js';
import { jsonText } from './text.js';

/** The options of a command that works on the configured database: `--config`, else GATEWAY_CONFIG. */
export type WithConfig = { config?: string };
export const CONFIG_OPTION = ['--config <path>', 'configuration file (or GATEWAY_CONFIG)'] as const;

/** The configuration named by --config or GATEWAY_CONFIG; without one, the embedded default. */
export function localConfig(path: string | undefined): { cfg: ConfigFile; path: string | undefined } {
  const p = path ?? process.env.GATEWAY_CONFIG;
  if (p) return { cfg: loadConfigFile(p), path: p };
  return { cfg: validateConfig({}, '(embedded default)'), path: undefined };
}

/** Runs `fn` with the admin service over the configured store (commands that work on the database directly). */
export async function withAdmin<T>(configPath: string | undefined, fn: (admin: AdminService) => Promise<T>): Promise<T> {
  const { cfg } = localConfig(configPath);
  // Loaded on use, like the server: the client commands never open a database.
  const [{ openStore }, { AdminService }, { systemClock }] = await Promise.all([
    import('../store/index.js'),
    import('../admin/service.js'),
    import('../core/clock.js'),
  ]);
  const store = await openStore(cfg.database, { dataDir: cfg.data_dir, onLockWait: (m) => process.stderr.write(`${m}\n`) });
  try {
    return await fn(new AdminService(store, undefined, systemClock));
  } finally {
    await store.close();
  }
}

export { printJson } from './output.js';

/**
 * Writes a JSON array item by item, byte for byte as printJson would write the whole array: for a
 * list read in pages, so that it need not be held whole.
 */
export function jsonArrayWriter(): { item(v: unknown): void; end(): void } {
  let count = 0;
  const indent = (text: string) => text.replace(/\n/g, '\n  ');
  return {
    item(v) {
      writeOut(`${count++ === 0 ? '[\n' : ',\n'}  ${indent(jsonText(v))}`);
    },
    end() {
      writeOut(count === 0 ? '[]\n' : '\n]\n');
    },
  };
}

export const csv = (v: string | undefined): string[] | undefined =>
  v === undefined ? undefined : v.split(',').map((s) => s.trim()).filter(Boolean);
