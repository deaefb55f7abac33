import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { TcpRelay } from '../helpers/tcp-relay.js';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll } from 'vitest';

export const REDIS_URL = 'redis://127.0.0.1:6379';

/** Makes sure the local Redis answers, starting it the way CI does when it is down. */
export async function ensureRedis(): Promise<void> {
  if (await pings()) return;
  execFileSync('redis-server', [
    '--daemonize', 'yes', '--bind', '127.0.0.1', '-::1', '--port', '6379', '--save', '', '--appendonly', 'no',
    '--dir', '/var/lib/redis', '--logfile', '/var/log/redis/ci.log',
  ]);
  for (let i = 0; i < 50; i++) {
    if (await pings()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('Redis did not start on 127.0.0.1:6379');
}

async function pings(): Promise<boolean> {
  const r = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

/** A prefix no other test run uses. */
export function uniquePrefix(): string {
  return `test:${randomUUID()}:`;
}

/** Deletes every key under a prefix. */
export async function dropPrefix(prefix: string): Promise<void> {
  const r = new Redis(REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      if (keys.length > 0) await r.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
}

/**
 * A TCP relay in front of Redis that a test can take down (`stop`), hang (`stall`) and bring back on
 * the same port, to play a Redis outage and restart without touching the shared server.
 */
export class RedisRelay extends TcpRelay {
  constructor() {
    super(6379);
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }
}

/**
 * The usual life of a Redis limiter test file: Redis up before the first test, every limiter the
 * test opened (pushed onto `open`) closed after it, and the file's keys dropped at the end.
 */
export function redisTestKeys<T extends { close(): Promise<void> }>(): { prefix: string; open: T[] } {
  const prefix = uniquePrefix();
  const open: T[] = [];
  beforeAll(async () => {
    await ensureRedis();
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((l) => l.close()));
  });
  afterAll(async () => {
    await dropPrefix(prefix);
  });
  return { prefix, open };
}
