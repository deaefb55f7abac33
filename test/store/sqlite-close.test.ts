import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * Closing a file database waits for its checkpoint worker (an unref'd thread). A process whose
 * last pending work is that close must finish it and exit normally, not have Node end it with
 * "unfinished top-level await" (exit code 13) while the close is still waiting for the worker.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'gw-sqlite-close-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PROBE = `
import { openSqlite } from './src/store/sqlite-driver.ts';
const db = openSqlite(process.argv[1] + '/close.db');
await db.run('CREATE TABLE t (x INTEGER)');
await db.run('INSERT INTO t VALUES (1)');
await db.close();
process.stdout.write('closed');
`;

describe('SQLite driver close', () => {
  it('lets a process whose only pending work is the close finish it', async () => {
    const result = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', PROBE, dir], { cwd: root, encoding: 'utf8', timeout: 60_000 }, (e, stdout) =>
        resolve({ code: e ? ((e as { code?: number }).code ?? -1) : 0, stdout }),
      );
    });
    expect(result).toEqual({ code: 0, stdout: 'closed' });
  }, 90_000);
});
