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
import { buildServices } from './src/services.ts';
import { createLogger } from './src/ops/logger.ts';
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

/**
 * Smithy's SigV4 signer (a Bedrock upstream with AWS keys signs with it) and the OpenAPI document's
 * descriptions (with zod-to-json-schema) load on first use. The descriptions are ES modules, which
 * the CommonJS cache does not list: a module hook records every URL the process loads. The app is
 * built and made ready; the controls then ask for the document and sign a request.
 */
const ON_USE_PROBE = `
import { register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';
const { port1, port2 } = new MessageChannel();
const urls = new Set();
port1.on('message', (u) => urls.add(u));
port1.unref();
const HOOK = 'let port; export function initialize(d) { port = d.port; } export async function load(url, context, next) { port.postMessage(url); return next(url, context); }';
register('data:text/javascript,' + encodeURIComponent(HOOK), { data: { port: port2 }, transferList: [port2] });
const { createRequire } = await import('node:module');
const { validateConfig } = await import('./src/config/load.ts');
const { buildServices } = await import('./src/services.ts');
const { createLogger } = await import('./src/ops/logger.ts');
const { buildApp } = await import('./src/app.ts');
const require = createRequire(import.meta.url);
const settle = () => new Promise((r) => setTimeout(r, 100));
const loaded = async () => {
  await settle();
  const names = [...urls, ...Object.keys(require.cache)];
  return {
    signer: names.some((n) => /[\\/]node_modules[\\/]@smithy[\\/]signature-v4[\\/]/.test(n)),
    descriptions: names.some((n) => /[\\/]src[\\/]ops[\\/]openapi-operations\\.ts$/.test(n)),
    zodToJsonSchema: names.some((n) => /[\\/]node_modules[\\/]zod-to-json-schema[\\/]/.test(n)),
  };
};
const dataDir = process.argv[1];
const cfg = validateConfig({
  database: 'sqlite:' + dataDir + '/on-use.db',
  data_dir: dataDir,
  admin_token: 'test-admin-token-0123456789',
  secret: 'test-secret-0123456789abcdef',
  limits: { backend: 'memory' },
}, '(test)');
const services = await buildServices(cfg, { logger: createLogger('silent') });
const app = buildApp(services);
await app.ready();
const afterStart = await loaded();
const doc = await app.inject({ method: 'GET', url: '/openapi.json' });
const afterDocument = await loaded();
const { bedrockVendor } = await import('./src/embeddings/vendors/bedrock/adapter.ts');
const up = { options: { access_key_id: 'AKIATEST', secret_access_key: 'secret', region: 'us-east-1' } };
const signed = await bedrockVendor.sign({ method: 'POST', url: 'https://bedrock-runtime.us-east-1.amazonaws.com/model/m/invoke', headers: {}, body: '{}' }, up);
const afterSigning = await loaded();
await app.close();
await services.close();
process.stdout.write(JSON.stringify({ afterStart, afterDocument, afterSigning, status: doc.statusCode, authorization: signed.headers.authorization ?? '' }));
`;

describe('modules loaded by a gateway on SQLite with the in-process limiter', () => {
  it('loads the SigV4 signer and the OpenAPI descriptions only on first use', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', ON_USE_PROBE, dir], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
    }).catch((e: Error & { stderr?: string }) => {
      throw new Error(`probe failed: ${e.stderr ?? e.message}`);
    });
    const out = JSON.parse(stdout) as Record<string, unknown>;
    expect(out.afterStart).toEqual({ signer: false, descriptions: false, zodToJsonSchema: false });
    expect(out.status).toBe(200);
    expect(out.afterDocument).toEqual({ signer: false, descriptions: true, zodToJsonSchema: true });
    expect(out.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIATEST\//);
    expect(out.afterSigning).toEqual({ signer: true, descriptions: true, zodToJsonSchema: true });
  }, 90_000);

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
