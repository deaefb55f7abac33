import { existsSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { StartRollback } from '../../src/core/start-rollback.js';
import { createLogger } from '../../src/ops/logger.js';
import { buildServices } from '../../src/services.js';
import { waitFor } from '../helpers/process.js';
import { ensureRedis, REDIS_URL } from '../limits/redis-helper.js';

/**
 * A start-up step that fails after the database opened closes what the steps before it opened:
 * the SQLite file and the Redis limiter's connection are let go, the error seen is the one that
 * stopped the start, and a second start in the same process works.
 */
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Descriptors this process holds on files whose path starts with `prefix` (Linux /proc). */
function openFilesUnder(prefix: string): string[] {
  const held: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(prefix)) held.push(target);
    } catch {
      // A descriptor closed while listing.
    }
  }
  return held;
}

const tcpSockets = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;

describe('buildServices when a step after the database fails', () => {
  it.runIf(existsSync('/proc/self/fd'))('closes the database and the limiter, throws the step\'s own error, and can be started again', async () => {
    await ensureRedis();
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-start-rollback-'));
    dirs.push(dataDir);
    // The local blob store makes data_dir/videos, after the database and the limiter are open.
    writeFileSync(join(dataDir, 'videos'), 'not a directory');
    const dbFile = join(dataDir, 'gateway.db');
    const cfg = () =>
      validateConfig(
        {
          database: `sqlite:${dbFile}`,
          data_dir: dataDir,
          log_level: 'silent',
          admin_token: 'start-rollback-admin-token-0123456789',
          secret: 'start-rollback-secret-0123456789abcdef',
          limits: { backend: 'redis', redis_url: REDIS_URL },
        },
        '(test)',
      );
    const socketsBefore = tcpSockets();
    const failed = await buildServices(cfg(), { logger: createLogger('silent') }).then(
      () => undefined,
      (e: unknown) => e as NodeJS.ErrnoException,
    );
    expect(failed?.code).toBe('EEXIST');
    expect(failed?.message).toContain(join(dataDir, 'videos'));
    // The database file (and its WAL) is closed, and the limiter's Redis connection with it.
    expect(openFilesUnder(dbFile)).toEqual([]);
    await waitFor(() => tcpSockets() <= socketsBefore, 'the Redis connection to close', 3_000);

    rmSync(join(dataDir, 'videos'));
    const services = await buildServices(cfg(), { logger: createLogger('silent') });
    await services.admin.createAccount('after-retry', { balance: 1 });
    await services.close();
    expect(openFilesUnder(dbFile)).toEqual([]);
  }, 20_000);
});

describe('StartRollback', () => {
  it('closes last first, reports a close that fails, closes the rest, and throws the original error', async () => {
    const closed: string[] = [];
    const reported: string[] = [];
    const rollback = new StartRollback((what, e) => reported.push(`${what}: ${(e as Error).message}`));
    const original = new Error('the step that failed');
    const outcome = rollback.guard(async () => {
      rollback.add('first', () => closed.push('first'));
      rollback.add('second', async () => {
        closed.push('second');
        throw new Error('cannot close second');
      });
      rollback.add('third', async () => closed.push('third'));
      throw original;
    });
    await expect(outcome).rejects.toBe(original);
    expect(closed).toEqual(['third', 'second', 'first']);
    expect(reported).toEqual(['second: cannot close second']);
  });

  it('closes nothing once released', async () => {
    const closed: string[] = [];
    const rollback = new StartRollback(() => undefined);
    await rollback.guard(async () => {
      rollback.add('piece', () => closed.push('piece'));
      rollback.release();
    });
    await rollback.closeAll();
    expect(closed).toEqual([]);
  });
});
