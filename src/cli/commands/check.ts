import { readFileSync } from 'node:fs';
import { loadConfigFile } from '../../config/load.js';
import type { CliCommand } from '../command.js';
import { printJson } from '../client/options.js';
import { CliError, EXIT } from '../exit.js';
import { writeOut } from '../output.js';

/**
 * ${NAME} references (without a :-default) to unset variables. The loader reads those as empty, so
 * an optional secret can be left out; here a forgotten export is named before the gateway starts.
 */
function unsetReferences(path: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return []; // The loader reports an unreadable file with its own message.
  }
  const code = text.split('\n').map((l) => l.replace(/(^|\s)#.*$/, '')).join('\n');
  const names = [...code.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]!);
  return [...new Set(names)].filter((n) => !process.env[n]);
}

/** Validates a configuration as `serve` would, without opening the database or listening. */
export const checkCommand: CliCommand = {
  register(program, run) {
    program
      .command('check')
      .description('validate a configuration file (schema, ${ENV} references, vendors, prices)')
      .requiredOption('--config <path>', 'the file to check')
      .option('--probe', 'also make one free authenticated call per upstream (a models list or a status read) and report which answer')
      .option('--json', 'machine output')
      .action(
        run(async (o: { config: string; json?: boolean; probe?: boolean }) => {
          // Loaded on use: the same checks `serve` runs at start, vendor registries included.
          const [{ checkVendors }, { Catalog }] = await Promise.all([import('../../vendor-check.js'), import('../../routing/catalog.js')]);
          let cfg;
          try {
            cfg = loadConfigFile(o.config);
            const unset = unsetReferences(o.config);
            if (unset.length > 0) throw new Error(`unset environment variables: ${unset.join(', ')}`);
            checkVendors(cfg);
            new Catalog(cfg);
          } catch (e) {
            throw new CliError(`${o.config} is not valid:\n  ${(e as Error).message}`, EXIT.usage);
          }
          const upstreams = cfg.upstreams.map((u) => ({ name: u.name, vendor: u.vendor, base_url: u.base_url, models: u.models }));
          if (o.probe) {
            const { probeUpstreams, probeTable } = await import('../probe/probe.js');
            const rows = await probeUpstreams(cfg);
            if (o.json) printJson({ valid: true, upstreams, models: Object.keys(cfg.models), probe: rows });
            else writeOut(probeTable(rows));
            const down = rows.filter((r) => r.result !== 'answers');
            if (down.length > 0) throw new CliError(`${down.length} of ${rows.length} upstreams did not answer: ${down.map((r) => `${r.name} ${r.result}`).join(', ')}`, down.some((r) => r.result === 'refused') ? EXIT.auth : EXIT.failure);
            return;
          }
          if (o.json) return printJson({ valid: true, upstreams, models: Object.keys(cfg.models) });
          for (const u of upstreams) writeOut(`${u.name}\t${u.vendor}\t${u.base_url}\t${u.models.join(',')}\n`);
          process.stderr.write(`${o.config} is valid: ${upstreams.length} upstreams, ${Object.keys(cfg.models).length} models\n`);
        }),
      );
  },
};
