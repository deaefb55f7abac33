import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { vi } from 'vitest';
import { buildApp } from '../../src/app.js';
import { ensureDemoKey, startDemo, type Demo } from '../../src/demo.js';
import { main } from '../../src/main.js';
import { buildServices, type Services } from '../../src/services.js';
import { createLogger } from '../../src/ops/logger.js';
import { closeListener } from '../../src/http/close-listener.js';

/** The embedded default (simulators, SQLite, demo key) on a random port with fast simulated tasks. */
export interface DemoGateway {
  url: string;
  key: string;
  dir: string;
  services: Services;
  close(): Promise<void>;
}

export async function startDemoGateway(): Promise<DemoGateway> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-cli-client-'));
  const demo: Demo = await startDemo({ host: '127.0.0.1', port: 0, dataDir: dir, taskMs: 300 });
  demo.config.log_level = 'silent';
  const services = await buildServices(demo.config, { logger: createLogger('silent') });
  const app: FastifyInstance = buildApp(services);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  (services.video.deps.settings as { publicUrl: string }).publicUrl = url;
  (services.video.deps.settings as { pollIntervalMs: number }).pollIntervalMs = 0;
  const key = await ensureDemoKey(services.admin, dir);
  return {
    url,
    key,
    dir,
    services,
    async close() {
      await closeListener(app);
      await services.close();
      await Promise.all(demo.sims.map((s) => s.close()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface CliRun {
  code: number;
  out: string;
  err: string;
}

/** Runs the CLI in-process, capturing stdout and stderr (neither is a terminal here). */
export async function cli(...argv: string[]): Promise<CliRun> {
  let out = '';
  let err = '';
  const o = vi.spyOn(process.stdout, 'write').mockImplementation((c) => ((out += String(c)), true));
  const e = vi.spyOn(process.stderr, 'write').mockImplementation((c) => ((err += String(c)), true));
  try {
    const code = await main(argv);
    return { code, out, err };
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}

/** Fast polls and backoff for simulated vendors; the API address and key from the environment, as a user would set them. */
export function clientEnv(gw: { url: string; key: string }): () => void {
  const saved = { ...process.env };
  Object.assign(process.env, { GATEWAY_URL: gw.url, GATEWAY_API_KEY: gw.key, GATEWAY_CLI_POLL_MS: '100', GATEWAY_CLI_BACKOFF_MS: '10' });
  return () => {
    for (const k of ['GATEWAY_URL', 'GATEWAY_API_KEY', 'GATEWAY_CLI_POLL_MS', 'GATEWAY_CLI_BACKOFF_MS']) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  };
}

/** Control characters other than newline and tab: what a progress bar or a terminal escape would leave. */
export const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;
