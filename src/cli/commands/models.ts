import type { CliCommand } from '../command.js';
import { apiClient, clientOptions, printJson, type ClientFlags } from '../client/options.js';
import { printable } from '../text.js';
import { writeOut } from '../output.js';

interface Model {
  id: string;
  owned_by?: string;
  capabilities?: string[];
}

export const modelsCommand: CliCommand = {
  register(program, run) {
    clientOptions(program.command('models').description('list the models this key may use')).action(
      run(async (o: ClientFlags) => {
        const list = await apiClient(o).json<{ data: Model[] }>('GET', '/v1/models');
        if (o.json) return printJson(list);
        for (const m of list.data) {
          writeOut(`${[m.id, m.owned_by ?? '-', (m.capabilities ?? []).join(',')].map((s) => printable(s)).join('\t')}\n`);
        }
      }),
    );
  },
};
