import { existsSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import type { CliCommand } from '../command.js';
import { CliError, EXIT } from '../exit.js';
import { renderConfig, VENDOR_IDS } from '../init/templates.js';
import { writeOut } from '../output.js';

async function askVendors(): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return await rl.question(`Vendors to enable, comma-separated (${VENDOR_IDS.join(', ')}): `);
  } finally {
    rl.close();
  }
}

export const initCommand: CliCommand = {
  register(program, run) {
    program
      .command('init')
      .description('write a commented gateway.yaml for the vendors you use (asks which, unless --vendors)')
      .option('--vendors <list>', `comma-separated, from: ${VENDOR_IDS.join(', ')}`)
      .option('--output <file>', 'where to write it', 'gateway.yaml')
      .option('--force', 'overwrite an existing file')
      .action(
        run(async (o: { vendors?: string; output: string; force?: boolean }) => {
          let answer = o.vendors;
          if (answer === undefined) {
            if (!process.stdin.isTTY) throw new CliError('pass --vendors (stdin is not a terminal to ask on)', EXIT.usage);
            answer = await askVendors();
          }
          const vendors = answer.split(',').map((s) => s.trim()).filter(Boolean);
          const unknown = vendors.filter((v) => !VENDOR_IDS.includes(v));
          if (vendors.length === 0 || unknown.length > 0) {
            throw new CliError(`unknown vendor${unknown.length === 1 ? '' : 's'} '${unknown.join(', ')}' (known: ${VENDOR_IDS.join(', ')})`, EXIT.usage);
          }
          if (existsSync(o.output) && !o.force) throw new CliError(`${o.output} exists; pass --force to overwrite it`, EXIT.usage);
          writeFileSync(o.output, renderConfig(vendors));
          process.stderr.write(`wrote ${o.output}; fill in the prices, export the variables it names, then: gateway check --config ${o.output}\n`);
          writeOut(`${o.output}\n`);
        }),
      );
  },
};
