import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';

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
 * A TCP relay in front of Redis that a test can take down and bring back on the same port, to
 * play a Redis outage and restart without touching the shared server.
 */
export class RedisRelay {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private readonly pairs = new Set<{ client: Socket; upstream: Socket }>();
  port = 0;

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(6379, '127.0.0.1');
      this.sockets.add(client);
      this.sockets.add(upstream);
      client.pipe(upstream).pipe(client);
      const pair = { client, upstream };
      this.pairs.add(pair);
      const drop = () => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    const addr = server.address();
    if (addr && typeof addr === 'object') this.port = addr.port;
    this.server = server;
  }

  /** Stops passing Redis's answers on (a hung Redis): commands time out, the connection stays up. */
  stall(): void {
    for (const p of this.pairs) p.upstream.unpipe(p.client);
  }

  resume(): void {
    for (const p of this.pairs) p.upstream.pipe(p.client);
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }
}
