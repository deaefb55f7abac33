import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { buildServices, type Services } from '../../src/services.js';

/**
 * The S3 blob store's secret key is an operator credential like an upstream's: a storage error the
 * gateway logs may quote what it was sent, so the log's one redaction knows it too.
 */
const SECRET = 'blob-store-secret-Zq81xJ3kP0wLm5VbN7cR';
const dir = mkdtempSync(join(tmpdir(), 'gw-blob-key-'));
let services: Services | undefined;
afterAll(async () => {
  await services?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the log redaction and the blob store key', () => {
  it('a log line quoting the S3 secret_access_key is written without it', async () => {
    const lines: string[] = [];
    const cfg = validateConfig(
      {
        database: `sqlite:${join(dir, 'gateway.db')}`,
        data_dir: dir,
        log_level: 'info',
        admin_token: 'test-admin-token-0123456789',
        secret: 'test-secret-0123456789abcdef',
        video: { blobs: { backend: 's3', bucket: 'videos', endpoint: 'http://127.0.0.1:9', access_key_id: 'AKIDEXAMPLE', secret_access_key: SECRET } },
      },
      '(test)',
    );
    services = await buildServices(cfg, { logSink: { write: (line: string) => lines.push(line) } });
    services.logger.warn({ err: `SignatureDoesNotMatch: expected signature for key ${SECRET}` }, `blob store said ${SECRET}`);
    await new Promise<void>((r) => services!.logger.flush(() => r()));
    const line = lines.find((l) => l.includes('blob store said'));
    expect(line).toBeDefined();
    expect(line).not.toContain(SECRET);
    expect(line).not.toContain(SECRET.slice(0, 20));
  });
});
