import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * ioredis (~23 MB of RSS) and pg (~16 MB) are imported only when the config selects Redis or
 * PostgreSQL. Checked in a fresh process, since this test runner has loaded both already: the
 * gateway's services are built on SQLite with the in-process limiter, then the CommonJS module
 * cache (where Node puts both packages, also when imported from ES modules) is read. The same
 * probe then imports both itself, so a probe that could not see them would fail the test.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'gw-lazy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PROBE = `
import { createRequire } from 'node:module';
import { validateConfig } from './src/config/load.ts';
import { buildServices, createLogger } from './src/services.ts';
const require = createRequire(import.meta.url);
const loaded = () => [...new Set(Object.keys(require.cache).map((k) => /[\\\\/]node_modules[\\\\/](ioredis|pg)[\\\\/]/.exec(k)?.[1]).filter(Boolean))].sort();
const dataDir = process.argv[1];
const cfg = validateConfig({
  database: 'sqlite:' + dataDir + '/gateway.db',
  data_dir: dataDir,
  admin_token: 'test-admin-token-0123456789',
  secret: 'test-secret-0123456789abcdef',
  limits: { backend: 'memory' },
}, '(test)');
const services = await buildServices(cfg, { logger: createLogger('silent') });
await services.readiness.report();
const afterStart = loaded();
await services.close();
await import('ioredis');
await import('pg');
process.stdout.write(JSON.stringify({ afterStart, afterImport: loaded() }));
`;

describe('modules loaded by a gateway on SQLite with the in-process limiter', () => {
  it('does not load ioredis or pg', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', PROBE, dir], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
    }).catch((e: Error & { stderr?: string }) => {
      throw new Error(`probe failed: ${e.stderr ?? e.message}`);
    });
    const out = JSON.parse(stdout) as { afterStart: string[]; afterImport: string[] };
    expect(out.afterStart).toEqual([]);
    // The control: the same check sees both once they are imported.
    expect(out.afterImport).toEqual(['ioredis', 'pg']);
  }, 90_000);
});
