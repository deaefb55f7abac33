import { connect, createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisRateLimiter, type LimiterLogger } from '../../src/limits/redis.js';
import type { LimitScope } from '../../src/limits/types.js';
import { waitFor } from '../helpers/process.js';
import { REDIS_URL, RedisRelay, redisTestKeys } from './redis-helper.js';

/**
 * A script call (turn) whose command timed out may run in Redis all the same: its bytes were sent
 * before Redis hung (or before the answers stopped coming back), and Redis runs them at once or when
 * it resumes. The limiter meanwhile decided the turn's admissions on its local windows and hands
 * them to Redis afterwards; each must count once in the shared window, as the client was told.
 */
const T0 = 1_700_000_000_000;
const { prefix, open } = redisTestKeys<RedisRateLimiter>();
const quiet: LimiterLogger = { warn: () => undefined, info: () => undefined };

function limiter(url: string, sub: string, clock: { t: number }): RedisRateLimiter {
  const l = new RedisRateLimiter({ url, keyPrefix: prefix + sub, now: () => clock.t, logger: quiet, commandTimeoutMs: 300, coolDownMs: 50, heartbeatMs: 50 });
  open.push(l);
  return l;
}

/** What the shared window of a scope holds: [requests, tokens]. */
async function shared(sub: string, family: string, scopeId: string): Promise<[number, number]> {
  const r = new Redis(REDIS_URL);
  try {
    const [req, tok] = await r.hmget(`${prefix}${sub}rl:{${family}}:w2:${scopeId}`, 'R', 'T');
    return [Number(req ?? 0), Number(tok ?? 0)];
  } finally {
    r.disconnect();
  }
}

/** Waits until the limiter decides in Redis again and has handed over what it owed. */
async function backInRedis(l: RedisRateLimiter): Promise<void> {
  const other: LimitScope[] = [{ id: `key:other-${Math.random()}`, quota: { rpm: 1_000 } }];
  await waitFor(async () => {
    await l.admit('chat', other, 0);
    return !l.isDegraded;
  }, 'the limiter to use Redis again', 10_000);
  // An admission waits for a pending hand-over, and one connection's commands run in order: once
  // this one is answered, the hand-over has been applied.
  await l.admit('chat', other, 0);
}

/**
 * In front of Redis: `hold()` keeps what the clients send from reaching Redis (and answers nothing)
 * until `deliverHeld()`, even after a client gave up and closed its connection: a command that
 * reaches Redis only after the client's timeout, its hand-over and all. Connections opened while
 * holding are closed at once (Redis unreachable).
 */
class HoldingRelay {
  port = 0;
  private server?: Server;
  private holding = false;
  private readonly pairs = new Set<{ client: Socket; upstream: Socket; held?: Buffer[] }>();

  async start(): Promise<void> {
    const server = createServer((client) => {
      if (this.holding) {
        client.destroy();
        return;
      }
      const upstream = connect(6379, '127.0.0.1');
      const pair: { client: Socket; upstream: Socket; held?: Buffer[] } = { client, upstream };
      this.pairs.add(pair);
      client.on('data', (chunk: Buffer) => (pair.held ? pair.held.push(chunk) : upstream.write(chunk)));
      upstream.on('data', (chunk: Buffer) => {
        if (!pair.held && !client.destroyed) client.write(chunk);
      });
      const drop = () => {
        client.destroy();
        // What is held still goes to Redis, later.
        if (pair.held) return;
        upstream.destroy();
        this.pairs.delete(pair);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  hold(): void {
    this.holding = true;
    for (const p of this.pairs) p.held ??= [];
  }

  /** New connections pass again; what was held stays held. */
  reopen(): void {
    this.holding = false;
  }

  /** Sends what was held to Redis and resolves once Redis answered all of it. */
  async deliverHeld(): Promise<number> {
    let delivered = 0;
    for (const p of [...this.pairs]) {
      if (!p.held) continue;
      const bytes = Buffer.concat(p.held);
      p.held = undefined;
      if (bytes.length === 0) continue;
      delivered++;
      // A PING after them: its answer comes once Redis ran everything before it on this connection.
      await new Promise<void>((resolve) => {
        let seen = '';
        p.upstream.on('data', (chunk: Buffer) => {
          seen += chunk.toString('latin1');
          if (seen.endsWith('+PONG\r\n')) resolve();
        });
        p.upstream.write(Buffer.concat([bytes, Buffer.from('PING\r\n')]));
      });
      p.upstream.destroy();
      this.pairs.delete(p);
    }
    return delivered;
  }

  async stop(): Promise<void> {
    for (const p of this.pairs) {
      p.client.destroy();
      p.upstream.destroy();
    }
    this.pairs.clear();
    const server = this.server;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

describe('RedisRateLimiter: a turn that runs in Redis after its call timed out', () => {
  it('counts each admission once: what Redis ran is replaced by what the local windows decided', async () => {
    const relay = new RedisRelay();
    await relay.start();
    const clock = { t: T0 };
    const l = limiter(relay.url, 'ran:', clock);
    // A second instance, so that the outage's local windows hold a share (rpm 10 / 2 = 5).
    const other = limiter(REDIS_URL, 'ran:', clock);
    const s: LimitScope[] = [
      { id: 'key:k1', quota: { rpm: 10, tpm: 10_000 } },
      { id: 'account:a1', quota: { rpm: 100, tpm: 100_000 } },
    ];
    try {
      await waitFor(() => l.connected && other.connected && l.instances === 2, 'both instances to register', 5_000);
      expect((await l.admit('chat', s, 100)).allowed).toBe(true);

      // Redis still gets and runs what is sent; its answers no longer come back.
      relay.stall({ newConnectionsToo: true });
      const [, ...decisions] = await Promise.all([l.adjustTokens('chat', s, 50), ...Array.from({ length: 6 }, () => l.admit('chat', s, 100))]);
      expect(l.isDegraded).toBe(true);
      // Redis ran the turn: 6 more admitted there. Locally the share had room for 4 (1 known used).
      expect(decisions.map((d) => d!.allowed)).toEqual([true, true, true, true, false, false]);
      expect(await shared('ran:', 'chat', 'key:k1')).toEqual([7, 750]);

      relay.resume();
      await backInRedis(l);
      // Once each: the admission before, the 4 the clients were told were admitted, the correction.
      expect(await shared('ran:', 'chat', 'key:k1')).toEqual([5, 550]);
      expect(await shared('ran:', 'chat', 'account:a1')).toEqual([5, 550]);
      const next = await other.admit('chat', s, 0);
      expect(next.headers['x-ratelimit-remaining-requests']).toBe('4');
    } finally {
      await relay.stop();
    }
  });

  it('makes a turn that reaches Redis only after the hand-over change nothing', async () => {
    const relay = new HoldingRelay();
    await relay.start();
    const clock = { t: T0 };
    const l = limiter(relay.url, 'late:', clock);
    const s: LimitScope[] = [{ id: 'key:k2', quota: { rpm: 10, tpm: 10_000 } }];
    try {
      await waitFor(() => l.connected, 'the limiter to connect', 5_000);
      expect((await l.admit('chat', s, 100)).allowed).toBe(true);

      relay.hold();
      const decisions = await Promise.all(Array.from({ length: 3 }, () => l.admit('chat', s, 100)));
      expect(decisions.every((d) => d.allowed)).toBe(true);
      expect(l.isDegraded).toBe(true);

      relay.reopen();
      await backInRedis(l);
      expect(await shared('late:', 'chat', 'key:k2')).toEqual([4, 400]);

      // The timed-out turn's bytes reach Redis now, long after its caller gave up on it.
      expect(await relay.deliverHeld()).toBeGreaterThanOrEqual(1);
      expect(await shared('late:', 'chat', 'key:k2')).toEqual([4, 400]);
    } finally {
      await relay.stop();
    }
  });

  it('counts a give-back once whether the turn holding it arrives before the hand-over or after', async () => {
    const relay = new HoldingRelay();
    await relay.start();
    const clock = { t: T0 };
    const l = limiter(relay.url, 'late-back:', clock);
    const s: LimitScope[] = [{ id: 'key:k3', quota: { rpm: 10, tpm: 10_000 } }];
    try {
      await waitFor(() => l.connected, 'the limiter to connect', 5_000);
      const a = await l.admit('chat', s, 1000);
      relay.hold();
      // The answer used 600 tokens fewer than estimated: the correction's call times out.
      await l.adjustTokens('chat', s, -600, a.second);
      expect(l.isDegraded).toBe(true);

      relay.reopen();
      await backInRedis(l);
      expect(await shared('late-back:', 'chat', 'key:k3')).toEqual([1, 400]);
      expect(await relay.deliverHeld()).toBeGreaterThanOrEqual(1);
      expect(await shared('late-back:', 'chat', 'key:k3')).toEqual([1, 400]);
    } finally {
      await relay.stop();
    }
  });
});
