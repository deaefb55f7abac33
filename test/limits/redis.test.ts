import { describe, expect, it } from 'vitest';
import { RedisRateLimiter, type LimiterLogger } from '../../src/limits/redis.js';
import { createLimiter } from '../../src/limits/index.js';
import type { LimitDecision } from '../../src/limits/decision.js';
import type { LimitScope, Quota } from '../../src/limits/types.js';
import { REDIS_URL, RedisRelay, redisTestKeys } from './redis-helper.js';

const T0 = 1_700_000_000_000;
const { prefix, open } = redisTestKeys<RedisRateLimiter>();
/**
 * The command timeout of the limiters whose decisions are compared exactly. The default (500 ms) is
 * measured in this process: held that long by a busy machine, it times a command out, the limiter
 * decides on its local windows for a cool-down, and the comparison fails though Redis answered.
 */
const COMMAND_TIMEOUT_MS = 5_000;

function recordingLogger() {
  const lines: { level: 'warn' | 'info'; msg: string }[] = [];
  const logger: LimiterLogger = {
    warn: (msg) => lines.push({ level: 'warn', msg }),
    info: (msg) => lines.push({ level: 'info', msg }),
  };
  return { lines, logger };
}

/** A limiter on the shared Redis; `clock` moves the window, `sub` keeps tests from sharing keys. */
function limiter(clock: { t: number } | undefined, opts: { url?: string; logger?: LimiterLogger; coolDownMs?: number; sub?: string; heartbeatMs?: number } = {}) {
  const l = new RedisRateLimiter({
    url: opts.url ?? REDIS_URL,
    keyPrefix: prefix + (opts.sub ?? ''),
    heartbeatMs: opts.heartbeatMs,
    now: clock ? () => clock.t : undefined,
    logger: opts.logger ?? recordingLogger().logger,
    coolDownMs: opts.coolDownMs,
    commandTimeoutMs: COMMAND_TIMEOUT_MS,
  });
  open.push(l);
  return l;
}

async function ready(l: RedisRateLimiter, scopes: LimitScope[]): Promise<void> {
  // The client connects in the background; until then admissions are (correctly) local.
  for (let i = 0; i < 100; i++) {
    if (l.connected) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`limiter never connected (${scopes.length} scopes)`);
}

let n = 0;
const scope = (quota: Quota, kind = 'key'): LimitScope => ({ id: `${kind}:t${++n}`, quota });


describe('RedisRateLimiter', () => {
  it('refuses the request after the last allowed one with an accurate Retry-After', async () => {
    const clock = { t: T0 };
    const l = limiter(clock);
    const s = [scope({ rpm: 2 })];
    await ready(l, s);
    expect((await l.admit('chat', s, 0)).allowed).toBe(true);
    clock.t += 10_000;
    expect((await l.admit('chat', s, 0)).allowed).toBe(true);
    const refused = (await l.admit('chat', s, 0)) as LimitDecision;
    expect(refused.allowed).toBe(false);
    expect(refused.reason).toBe('requests');
    expect(refused.retryAfterSeconds).toBe(50);
    clock.t += 30_000;
    expect((await l.admit('chat', s, 0)).retryAfterSeconds).toBe(20);
    clock.t += 20_000;
    expect((await l.admit('chat', s, 0)).allowed).toBe(true);
    expect(l.isDegraded).toBe(false);
  });

  it('limits tokens, corrects them with real usage, and reports OpenAI headers', async () => {
    const clock = { t: T0 + 250 };
    const l = limiter(clock);
    const s = [scope({ rpm: 100, tpm: 1000 }), scope({ rpm: 10, tpm: 5000 }, 'account')];
    await ready(l, s);
    const a = await l.admit('embeddings', s, 800);
    expect(a.headers).toEqual({
      'x-ratelimit-limit-requests': '10',
      'x-ratelimit-remaining-requests': '9',
      'x-ratelimit-reset-requests': '59.75s',
      'x-ratelimit-limit-tokens': '1000',
      'x-ratelimit-remaining-tokens': '200',
      'x-ratelimit-reset-tokens': '59.75s',
    });
    const refused = (await l.admit('embeddings', s, 300)) as LimitDecision;
    expect(refused.reason).toBe('tokens');
    expect(refused.retryAfterSeconds).toBe(60);
    await l.adjustTokens('embeddings', s, -600);
    const b = await l.admit('embeddings', s, 300);
    expect(b.allowed).toBe(true);
    expect(b.headers['x-ratelimit-remaining-tokens']).toBe('500');
    const big = (await l.admit('embeddings', s, 1001)) as LimitDecision;
    expect(big.reason).toBe('too_large');
  });

  it('keeps chat and embeddings apart', async () => {
    const clock = { t: T0 };
    const l = limiter(clock);
    const s = [scope({ rpm: 1, tpm: 50 })];
    await ready(l, s);
    expect((await l.admit('chat', s, 50)).allowed).toBe(true);
    expect((await l.admit('chat', s, 1)).allowed).toBe(false);
    expect((await l.admit('embeddings', s, 50)).allowed).toBe(true);
    expect((await l.admit('embeddings', s, 1)).allowed).toBe(false);
  });

  it('shares one quota between two gateway instances, atomically', async () => {
    const clock = { t: T0 };
    const a = limiter(clock);
    const b = limiter(clock);
    const s = [scope({ rpm: 20 }), scope({ rpm: 1000 }, 'account')];
    await ready(a, s);
    await ready(b, s);
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).admit('chat', s, 0)));
    expect(results.filter((r) => r.allowed)).toHaveLength(20);
    // Both instances see the other's usage.
    expect((await a.admit('chat', s, 0)).allowed).toBe(false);
    expect((await b.admit('chat', s, 0)).allowed).toBe(false);
  });

  it('uses the Redis server clock by default', async () => {
    const l = limiter(undefined);
    const s = [scope({ rpm: 1 })];
    await ready(l, s);
    expect((await l.admit('chat', s, 0)).allowed).toBe(true);
    const r = await l.admit('chat', s, 0);
    expect(r.allowed).toBe(false);
    expect(r.retryAfterSeconds).toBeGreaterThanOrEqual(59);
    expect(r.retryAfterSeconds).toBeLessThanOrEqual(60);
  });

  it('falls back to local limits when Redis cannot be reached, logging once and never failing', async () => {
    const { lines, logger } = recordingLogger();
    const clock = { t: T0 };
    const l = limiter(clock, { url: 'redis://127.0.0.1:1', logger });
    const s = [scope({ rpm: 3 })];
    const got: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      got.push((await l.admit('chat', s, 5)).allowed);
      await new Promise((r) => setTimeout(r, 50)); // let reconnect attempts fail in between
    }
    await l.adjustTokens('chat', s, 10);
    expect(got).toEqual([true, true, true, false]);
    expect(l.isDegraded).toBe(true);
    expect(lines.filter((x) => x.level === 'warn')).toHaveLength(1);
    expect(lines[0]!.msg).toMatch(/Redis unavailable/);
  });

  it('degrades during an outage to its share of the quota, and hands Redis what it admitted when it answers again', async () => {
    const relay = new RedisRelay();
    await relay.start();
    const { lines, logger } = recordingLogger();
    const clock = { t: T0 };
    const viaRelay = limiter(clock, { url: relay.url, logger, coolDownMs: 50, sub: 'degrade:', heartbeatMs: 50 });
    const direct = limiter(clock, { sub: 'degrade:', heartbeatMs: 50 });
    const s = [scope({ rpm: 6 })];
    await ready(viaRelay, s);
    await ready(direct, s);
    for (let i = 0; i < 100 && viaRelay.instances !== 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(viaRelay.instances).toBe(2);
    try {
      expect((await viaRelay.admit('chat', s, 0)).allowed).toBe(true); // shared: 1 used

      await relay.stop();
      // Alone, it takes its share (6 / 2 instances = 3), counting the 1 it knows was used.
      const local = [];
      for (let i = 0; i < 3; i++) local.push((await viaRelay.admit('chat', s, 0)).allowed);
      expect(local).toEqual([true, true, false]);
      expect(viaRelay.isDegraded).toBe(true);
      expect(lines.filter((x) => x.level === 'warn')).toHaveLength(1);
      const afterOutage = await direct.admit('chat', s, 0); // the shared quota has not seen the local ones yet
      expect(afterOutage.headers['x-ratelimit-remaining-requests']).toBe('4');

      await relay.start();
      // Keep sending until an admission goes through Redis again (that one is counted there).
      for (let i = 0; i < 100 && viaRelay.isDegraded; i++) {
        await new Promise((r) => setTimeout(r, 50));
        await viaRelay.admit('chat', s, 0);
      }
      expect(viaRelay.isDegraded).toBe(false);
      expect(lines.some((x) => x.level === 'info' && /answers again/.test(x.msg))).toBe(true);
      // The hand-over runs in the background; it went out on this limiter's connection when Redis
      // answered again, and Redis runs one connection's commands in order: once a later command on
      // it (an admission of a scope of its own) is answered, the hand-over has been applied.
      await viaRelay.admit('chat', [scope({ rpm: 1 })], 0);
      // Shared now: 1 before, 2 local handed over, 1 direct, 1 at recovery; one more fills 6.
      expect((await direct.admit('chat', s, 0)).allowed).toBe(true);
      expect((await direct.admit('chat', s, 0)).allowed).toBe(false);
      expect((await viaRelay.admit('chat', s, 0)).allowed).toBe(false);
    } finally {
      await relay.stop();
    }
  });

  it('treats a Redis that stops answering as down, and uses it again once it answers', async () => {
    const relay = new RedisRelay();
    await relay.start();
    const { lines, logger } = recordingLogger();
    const clock = { t: T0 };
    const l = new RedisRateLimiter({ url: relay.url, keyPrefix: `${prefix}stall:`, now: () => clock.t, logger, commandTimeoutMs: 100, coolDownMs: 50 });
    open.push(l);
    const s = [scope({ rpm: 2 })];
    await ready(l, s);
    try {
      relay.stall();
      const started = Date.now();
      const a = await l.admit('chat', s, 0);
      expect(a.allowed).toBe(true);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(l.isDegraded).toBe(true);
      expect((await l.admit('chat', s, 0)).allowed).toBe(true); // local window, cool-down running
      expect((await l.admit('chat', s, 0)).allowed).toBe(false);
      relay.resume();
      for (let i = 0; i < 100 && l.isDegraded; i++) {
        await new Promise((r) => setTimeout(r, 60));
        await l.admit('chat', s, 0);
      }
      expect(l.isDegraded).toBe(false);
      expect(lines.filter((x) => x.level === 'warn')).toHaveLength(1);
    } finally {
      await relay.stop();
    }
  });

  it('gives back an admission that did no work, in Redis and in an outage', async () => {
    const clock = { t: T0 };
    const l = limiter(clock, { sub: 'release:' });
    const s = [scope({ rpm: 2, tpm: 100 })];
    await ready(l, s);
    expect((await l.admit('embeddings', s, 60)).allowed).toBe(true);
    await l.release('embeddings', s, 60);
    expect((await l.admit('embeddings', s, 90)).allowed).toBe(true); // the 60 tokens came back too
    expect((await l.admit('embeddings', s, 1)).allowed).toBe(true);
    expect((await l.admit('embeddings', s, 1)).allowed).toBe(false);

    const down = limiter(clock, { url: 'redis://127.0.0.1:1', sub: 'release-down:' });
    const t = [scope({ rpm: 1 })];
    expect((await down.admit('video', t, 0)).allowed).toBe(true);
    expect((await down.admit('video', t, 0)).allowed).toBe(false);
    await down.release('video', t, 0);
    expect((await down.admit('video', t, 0)).allowed).toBe(true);
  });

  it('is what createLimiter builds for the redis backend', async () => {
    const l = await createLimiter({ backend: 'redis', redis_url: REDIS_URL }, { keyPrefix: prefix, logger: recordingLogger().logger });
    expect(l).toBeInstanceOf(RedisRateLimiter);
    open.push(l as RedisRateLimiter);
    const s = [scope({ rpm: 1 })];
    await ready(l as RedisRateLimiter, s);
    expect((await l.admit('video', s, 0)).allowed).toBe(true);
    expect((await l.admit('video', s, 0)).allowed).toBe(false);
  });
});

describe('RedisRateLimiter when the window clock goes back', () => {
  it('renews the window expiry, so the admissions made since do not expire with the older seconds', async () => {
    const { Redis } = await import('ioredis');
    const clock = { t: T0 };
    const l = limiter(clock, { sub: 'clockback:' });
    const s = scope({ rpm: 100 });
    await ready(l, [s]);
    expect((await l.admit('chat', [s], 0)).allowed).toBe(true);
    const client = new Redis(REDIS_URL);
    try {
      // The scope's window (the prefix also holds the instances' heartbeat keys).
      const windowKeys = (await client.keys(`${prefix}clockback:*`)).filter((k) => k.endsWith(s.id));
      expect(windowKeys).toHaveLength(1);
      const windowKey = windowKeys[0];
      await new Promise((r) => setTimeout(r, 2_000));
      clock.t -= 120_000;
      expect((await l.admit('chat', [s], 0)).allowed).toBe(true);
      // Renewed to the whole window and a second again (61 s), not what was left of the first
      // expiry (59 s at most by now): the 1.5 s between leave room for a slow admission and read.
      expect(await client.pttl(windowKey!)).toBeGreaterThan(59_500);
    } finally {
      client.disconnect();
    }
  });
});

describe('RedisRateLimiter: corrections name the admission they correct', () => {
  it('takes tokens back from that admission\'s second only, and nothing once it left the window', async () => {
    const clock = { t: T0 + 10_000 };
    const l = limiter(clock, { sub: 'corr:' });
    const s = scope({ tpm: 100_000 });
    await ready(l, [s]);
    const a = await l.admit('embeddings', [s], 50_000);
    clock.t = T0 + 30_000;
    expect((await l.admit('embeddings', [s], 50_000)).allowed).toBe(true);
    clock.t = T0 + 31_000;
    await Promise.all([l.adjustTokens('embeddings', [s], -50_000, a.second), l.admit('embeddings', [s], 0)]);
    clock.t = T0 + 70_000;
    expect((await l.admit('embeddings', [s], 100_000)).allowed).toBe(false);

    // A long stream: admitted, then corrected after its minute has passed.
    const t = scope({ tpm: 100_000 });
    clock.t = T0 + 100_000;
    const stream = await l.admit('chat', [t], 90_000);
    clock.t = T0 + 161_000;
    expect((await l.admit('chat', [t], 100_000)).allowed).toBe(true);
    await Promise.all([l.adjustTokens('chat', [t], -89_990, stream.second), l.admit('chat', [t], 0)]);
    expect((await l.admit('chat', [t], 10)).allowed).toBe(false);
  });
});
