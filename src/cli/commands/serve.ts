import type { CliCommand } from '../command.js';
import { localConfig } from '../local.js';

export const serveCommand: CliCommand = {
  register(program, run) {
    program
      .command('serve')
      .description('run the gateway (no config: the embedded default with simulators under ./data)')
      .option('--config <path>', 'configuration file (or GATEWAY_CONFIG)')
      .option('--host <host>', 'listen address (or HOST)')
      .option('--port <port>', 'listen port (or PORT)')
      .action(
        run(async (o: { config?: string; host?: string; port?: string }) => {
          const { path } = localConfig(o.config);
          // Loaded on use: client commands should not pay for the server's start-up imports.
          const { serve } = await import('../../serve.js');
          await serve({ configPath: path, host: o.host, port: o.port });
        }),
      );
  },
};
