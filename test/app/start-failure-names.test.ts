import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runToExit } from '../helpers/process.js';

/**
 * A start that fails on its surroundings names the setting to change and what it pointed at: Node's
 * "listen EADDRINUSE: address already in use 127.0.0.1:8080" named no setting (nor which of the two
 * listeners), SQLite's "unable to open database file" neither the setting nor the file.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const entry = fileURLToPath(new URL('../faults/child-entry.ts', import.meta.url));
let dir: string;
let taken: Server;
let port: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gw-start-names-'));
  taken = createServer();
  await new Promise<void>((res) => taken.listen(0, '127.0.0.1', () => res()));
  port = (taken.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((res) => taken.close(res));
  rmSync(dir, { recursive: true, force: true });
});

/** `gateway serve` (from source) on this config: its exit code and everything it wrote. */
function serve(config: Record<string, unknown>, name: string): Promise<{ code: number | string; output: string }> {
  const file = join(dir, `${name}.json`);
  const cfg = { data_dir: join(dir, name), admin_token: 'start-names-admin-token-0123456789', secret: 'start-names-secret-0123456789', log_level: 'warn', ...config };
  writeFileSync(file, JSON.stringify(cfg));
  return runToExit(['--import', 'tsx', entry, 'serve', '--config', file], 20_000, { cwd: root });
}

describe('a start that fails names the setting', () => {
  it('the port in use: server.port and the address', async () => {
    const r = await serve({ database: `sqlite:${join(dir, 'a.db')}`, server: { host: '127.0.0.1', port } }, 'port');
    expect(r.output).toContain(`server.port: cannot listen on 127.0.0.1:${port}: another process is listening on it (EADDRINUSE)`);
    expect(r.code).toBe(1);
  }, 30_000);

  it("the metrics listener's port in use: metrics.port, not the main port", async () => {
    const r = await serve({ database: `sqlite:${join(dir, 'b.db')}`, server: { host: '127.0.0.1', port: 0 }, metrics: { port } }, 'metrics');
    expect(r.output).toContain(`metrics.port: cannot listen on 127.0.0.1:${port}: another process is listening on it (EADDRINUSE)`);
    expect(r.code).toBe(1);
  }, 30_000);

  it('a database file that cannot be opened: database and the path', async () => {
    const notDir = join(dir, 'plain-file');
    writeFileSync(notDir, 'x');
    const r = await serve({ database: `sqlite:${join(notDir, 'sub', 'gateway.db')}`, server: { host: '127.0.0.1', port: 0 } }, 'db');
    expect(r.output).toContain(`database: cannot open the SQLite file ${join(notDir, 'sub', 'gateway.db')}: `);
    expect(r.code).toBe(1);
  }, 30_000);
});
