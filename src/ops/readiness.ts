import type { Redis } from 'ioredis';
import type { ShutdownState } from '../http/shutdown-state.js';
import { MIGRATIONS } from '../store/migrations.js';
import type { Store } from '../store/types.js';

/** A check that has not answered by then counts as failed: a probe must answer quickly. */
const CHECK_TIMEOUT_MS = 1_000;
/**
 * How long the store check waits for SQLite's write lock: long enough that another process's
 * ordinary write (a CLI command on the same file) does not flip the probe, short enough that a lock
 * held on purpose is reported well within the check's limit.
 */
const WRITE_LOCK_WAIT_MS = 250;

export interface CheckResult {
  status: 'ok' | 'failing';
  /** A short fixed reason, never a driver's message (it may name hosts or users). */
  reason?: string;
  ms: number;
}

export interface ReadinessReport {
  ready: boolean;
  body: { status: 'ready' | 'not_ready'; checks: Record<string, CheckResult> };
}

type Check = () => Promise<string | undefined>;

/**
 * Readiness (`GET /ready`): the store answers (on SQLite, its write lock can also be taken: another
 * process holding it fails every write while reads still answer; and its writes have not been
 * failing lately for a full disk or an I/O error, which taking the lock does not show), every migration this build knows
 * is applied, Redis answers when the limiter uses it, and the process is not shutting down. Liveness (`/health`)
 * stays a constant answer that touches nothing.
 */
export class Readiness {
  /** The probe's Redis connection, once ioredis is loaded (only when the limiter uses Redis). */
  private readonly redis?: Promise<Redis>;
  /**
   * The PING in flight, shared by every `/ready` that arrives before it settles: a burst of probes
   * against a hung Redis costs one queued command, not one per request.
   */
  private ping?: Promise<string | undefined>;

  constructor(
    private readonly store: Pick<Store, 'appliedMigrations' | 'canTakeWriteLock' | 'writesFailing'>,
    private readonly shutdown: Pick<ShutdownState, 'isShuttingDown'>,
    redisUrl?: string,
  ) {
    if (redisUrl) this.redis = connectProbe(redisUrl);
  }

  async report(): Promise<ReadinessReport> {
    let applied: number[] | undefined;
    const storeCheck = timed(async () => {
      applied = await this.store.appliedMigrations();
      if (this.store.writesFailing()) return 'writes failing (disk full or I/O error)';
      return (await this.store.canTakeWriteLock(WRITE_LOCK_WAIT_MS)) ? undefined : 'write lock held by another process';
    });
    const redis = this.redis ? await this.redis : undefined;
    const redisCheck = redis ? timed(() => this.sharedPing(redis)) : undefined;
    const checks: Record<string, CheckResult> = { store: await storeCheck };
    checks.migrations = migrationsCheck(applied);
    if (redisCheck) checks.redis = await redisCheck;
    // 503 from the first moment of a drain, so load balancers stop sending new traffic.
    checks.shutdown = this.shutdown.isShuttingDown() ? { status: 'failing', reason: 'shutting down', ms: 0 } : { status: 'ok', ms: 0 };
    const ready = Object.values(checks).every((c) => c.status === 'ok');
    return { ready, body: { status: ready ? 'ready' : 'not_ready', checks } };
  }

  private sharedPing(redis: Redis): Promise<string | undefined> {
    this.ping ??= pingOrReset(redis).finally(() => {
      this.ping = undefined;
    });
    return this.ping;
  }

  async close(): Promise<void> {
    (await this.redis)?.disconnect();
  }
}

/**
 * Its own connection: the limiter's keeps retrying quietly and falls back to memory, so its state
 * says little about whether Redis answers right now. No offline queue: a PING while disconnected
 * fails at once instead of waiting for a reconnect. ioredis (about 23 MB of RSS) is imported here,
 * not at the top, so a gateway without Redis never loads it.
 */
async function connectProbe(url: string): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: CHECK_TIMEOUT_MS,
    retryStrategy: (n) => Math.min(n * 200, 2_000),
  });
  redis.on('error', () => undefined);
  redis.connect().catch(() => undefined);
  return redis;
}

/**
 * One PING, given up after the check's limit by dropping the connection: ioredis keeps a command
 * that has no answer queued until Redis answers, and a hung Redis (connection open, nothing read)
 * may never answer. Closing the socket rejects it (`maxRetriesPerRequest: 0`) and the retry strategy
 * opens a fresh connection for the next probe.
 */
async function pingOrReset(redis: Redis): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<string>((resolve) => {
    timer = setTimeout(() => {
      redis.stream?.destroy();
      resolve('no answer within 1 s');
    }, CHECK_TIMEOUT_MS);
  });
  const answer = redis.ping().then((a) => (a === 'PONG' ? undefined : 'unexpected answer'));
  answer.catch(() => undefined); // settles after the race when the reset rejects it
  try {
    return await Promise.race([answer, stuck]);
  } finally {
    clearTimeout(timer);
  }
}

/** Every migration this build knows must be applied (a newer instance may have applied more). */
function migrationsCheck(applied: number[] | undefined): CheckResult {
  if (!applied) return { status: 'failing', reason: 'store unavailable', ms: 0 };
  const have = new Set(applied);
  const missing = MIGRATIONS.map((m) => m.version).filter((v) => !have.has(v));
  return missing.length ? { status: 'failing', reason: `missing migration ${missing.join(', ')}`, ms: 0 } : { status: 'ok', ms: 0 };
}

async function timed(check: Check): Promise<CheckResult> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve('no answer within 1 s'), CHECK_TIMEOUT_MS);
  });
  let reason: string | undefined;
  try {
    reason = await Promise.race([check(), timeout]);
  } catch {
    reason = 'unavailable';
  } finally {
    clearTimeout(timer);
  }
  const ms = Math.round((performance.now() - start) * 10) / 10;
  return reason === undefined ? { status: 'ok', ms } : { status: 'failing', reason, ms };
}
