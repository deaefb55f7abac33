import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PG_URL } from '../store/harness.js';
import { runToExit } from '../helpers/process.js';

/**
 * A gateway that cannot start (its port is taken) must exit with an error, not stay alive serving
 * nothing: the PostgreSQL pool keeps connections open however long they sit idle, and the demo's
 * simulators listen on ports of their own.
 */
const BIN = fileURLToPath(new URL('../../bin/gateway.js', import.meta.url));
let dir: string;
let taken: Server;
let port: number;
const schema = `gw_startfail_${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gw-start-failure-'));
  taken = createServer();
  await new Promise<void>((res) => taken.listen(0, '127.0.0.1', () => res()));
  port = (taken.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((res) => taken.close(res));
  rmSync(dir, { recursive: true, force: true });
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
});

/** Runs `gateway serve` with these arguments; the exit code, or 'hung' if it is still alive after `ms`. */
function serve(args: string[], ms = 8_000, opts: { cwd?: string; env?: Record<string, string> } = {}): Promise<{ code: number | string; output: string }> {
  return runToExit([BIN, 'serve', ...args], ms, { cwd: opts.cwd ?? dir, env: { ...process.env, ...opts.env } });
}

describe('a gateway that cannot listen', () => {
  it('exits with an error on PostgreSQL, whose pool keeps idle connections open', async () => {
    const file = join(dir, 'pg.json');
    writeFileSync(
      file,
      JSON.stringify({
        database: `${PG_URL}?schema=${schema}`,
        data_dir: join(dir, 'pg-data'),
        admin_token: 'start-failure-admin-token-0123456789',
        secret: 'start-failure-secret-0123456789abcdef',
        server: { host: '127.0.0.1', port },
      }),
    );
    const r = await serve(['--config', file]);
    expect(r.output).toContain('EADDRINUSE');
    expect(r.code).toBe(1);
  }, 30_000);

  it('exits with an error in the demo, whose simulators listen on ports of their own', async () => {
    const r = await serve(['--host', '127.0.0.1', '--port', String(port)]);
    expect(r.output).toContain('EADDRINUSE');
    expect(r.code).toBe(1);
  }, 30_000);
});

describe('the demo (no config) when a start-up step fails', () => {
  it('exits 1 with the error on a PORT that is not a port number', async () => {
    const r = await serve([], 8_000, { env: { PORT: 'abc' } });
    expect(r.code).toBe(1);
    expect(r.output).toContain("PORT: 'abc' is not a port number");
  }, 30_000);

  it('exits 1 with the error, its simulators closed, when ./data cannot be the data directory', async () => {
    // The simulators are already listening when the data directory turns out to be a file.
    const cwd = join(dir, 'data-is-a-file');
    mkdirSync(cwd);
    writeFileSync(join(cwd, 'data'), '');
    const r = await serve(['--host', '127.0.0.1', '--port', '0'], 8_000, { cwd });
    expect(r.code).toBe(1);
    expect(r.output).toContain('EEXIST');
  }, 30_000);
});

describe('a gateway whose start fails after the database opened', () => {
  it('exits 1 with that error, its PostgreSQL pool and Redis connection closed', async () => {
    // The local blob store makes data_dir/videos after the database and the limiter are open.
    const dataDir = join(dir, 'videos-is-a-file');
    mkdirSync(dataDir);
    writeFileSync(join(dataDir, 'videos'), '');
    const file = join(dir, 'pg-late-failure.json');
    writeFileSync(
      file,
      JSON.stringify({
        database: `${PG_URL}?schema=${schema}`,
        data_dir: dataDir,
        admin_token: 'start-failure-admin-token-0123456789',
        secret: 'start-failure-secret-0123456789abcdef',
        limits: { backend: 'redis', redis_url: 'redis://127.0.0.1:6379' },
        server: { host: '127.0.0.1', port: 0 },
      }),
    );
    const r = await serve(['--config', file]);
    expect(r.output).toContain('EEXIST');
    expect(r.code).toBe(1);
  }, 30_000);
});
