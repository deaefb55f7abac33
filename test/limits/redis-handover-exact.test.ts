import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisRateLimiter, type LimiterLogger } from '../../src/limits/redis.js';
import type { LimitScope } from '../../src/limits/types.js';
import { waitFor } from '../helpers/process.js';
import { REDIS_URL, RedisRelay, redisTestKeys } from './redis-helper.js';

/**
 * What an outage's hand-over gives the shared windows, operation by operation: every admission the
 * clients were told of, every token correction and every give-back counts once, in either
 * direction, whether Redis ran the timed-out call before the hand-over or never, and however often
 * ioredis sends a call again after a reconnect.
 */
const T0 = 1_700_000_000_000;
const { prefix, open } = redisTestKeys<RedisRateLimiter>();
const quiet: LimiterLogger = { warn: () => undefined, info: () => undefined };
const opened: Redis[] = [];

function limiter(url: string, sub: string, clock: { t: number }, client?: Redis): RedisRateLimiter {
  const l = new RedisRateLimiter({ url, client, keyPrefix: prefix + sub, now: () => clock.t, logger: quiet, commandTimeoutMs: 300, coolDownMs: 50, heartbeatMs: 50 });
  open.push(l);
  return l;
}

/**
 * A client as an application may hand the limiter: ioredis's defaults, which keep the commands a
 * lost connection left unanswered and send them again once it is back (`maxRetriesPerRequest` 20,
 * `autoResendUnfulfilledCommands`), whether or not their callers already gave up on them.
 */
function resendingClient(url: string, commandTimeout: number): Redis {
  const c = new Redis(url, { commandTimeout, retryStrategy: () => 50 });
  c.on('error', () => undefined);
  opened.push(c);
  return c;
}

/** What the shared window of a scope holds: [requests, tokens]. */
async function shared(sub: string, scopeId: string): Promise<[number, number]> {
  const r = new Redis(REDIS_URL);
  try {
    const [req, tok] = await r.hmget(`${prefix}${sub}rl:{chat}:w2:${scopeId}`, 'R', 'T');
    return [Number(req ?? 0), Number(tok ?? 0)];
  } finally {
    r.disconnect();
  }
}

/** The shared window's token buckets, by second. */
async function tokenBuckets(sub: string, scopeId: string): Promise<Record<number, number>> {
  const r = new Redis(REDIS_URL);
  try {
    const all = await r.hgetall(`${prefix}${sub}rl:{chat}:w2:${scopeId}`);
    const out: Record<number, number> = {};
    for (const [f, v] of Object.entries(all)) if (/^t\d+$/.test(f) && Number(v) !== 0) out[Number(f.slice(1))] = Number(v);
    return out;
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
  // One connection's commands run in order: once this admission is answered, the hand-over is applied.
  await l.admit('chat', other, 0);
}

async function closeClients(): Promise<void> {
  for (const c of opened.splice(0)) c.disconnect();
}

describe('RedisRateLimiter: give-backs across an outage count once', () => {
  for (const withSecond of [true, false]) {
    it(`a correction in a timed-out call that Redis ran (${withSecond ? "the admission's second" : 'no second'})`, async () => {
      const relay = new RedisRelay();
      await relay.start();
      const clock = { t: T0 };
      const sub = `ran-${withSecond}:`;
      const l = limiter(relay.url, sub, clock);
      const s: LimitScope[] = [{ id: 'key:k1', quota: { rpm: 10, tpm: 10_000 } }];
      try {
        await waitFor(() => l.connected, 'the limiter to connect', 5_000);
        const a = await l.admit('chat', s, 1000);
        expect(a.allowed).toBe(true);
        relay.stall({ newConnectionsToo: true });
        // The answer used 600 tokens fewer than estimated; the call times out, Redis runs it.
        await l.adjustTokens('chat', s, -600, withSecond ? a.second : undefined);
        expect(l.isDegraded).toBe(true);
        expect(await shared(sub, 'key:k1')).toEqual([1, 400]);
        relay.resume();
        await backInRedis(l);
        expect(await shared(sub, 'key:k1')).toEqual([1, 400]);
      } finally {
        await relay.stop();
      }
    });
  }

  it('a correction and a give-back decided locally while Redis was away', async () => {
    const relay = new RedisRelay();
    await relay.start();
    const clock = { t: T0 };
    const l = limiter(relay.url, 'away:', clock);
    const s: LimitScope[] = [{ id: 'key:k2', quota: { rpm: 10, tpm: 10_000 } }];
    try {
      await waitFor(() => l.connected, 'the limiter to connect', 5_000);
      const a = await l.admit('chat', s, 1000);
      const b = await l.admit('chat', s, 500);
      expect(await shared('away:', 'key:k2')).toEqual([2, 1500]);
      await relay.stop();
      await waitFor(() => !l.connected, 'the connection to drop', 5_000);
      clock.t += 2_000;
      // Both go to the local windows: the first answer used 600 fewer tokens, the second request was refused upstream.
      await l.adjustTokens('chat', s, -600, a.second);
      await l.release('chat', s, 500, b.second);
      expect(l.isDegraded).toBe(true);
      await relay.start();
      await backInRedis(l);
      expect(await shared('away:', 'key:k2')).toEqual([1, 400]);
    } finally {
      await relay.stop();
    }
  });

  it("a call that ran is taken back in the seconds it changed, so each bucket leaves the window as it should", async () => {
    const relay = new RedisRelay();
    await relay.start();
    const clock = { t: T0 + 100 };
    const l = limiter(relay.url, 'seconds:', clock);
    const s: LimitScope[] = [{ id: 'key:k3', quota: { rpm: 10, tpm: 10_000 } }];
    const s0 = Math.floor(clock.t / 1000);
    try {
      await waitFor(() => l.connected, 'the limiter to connect', 5_000);
      const a = await l.admit('chat', s, 1000);
      clock.t += 5_000;
      relay.stall({ newConnectionsToo: true });
      // One call: a correction of the earlier admission's second, and an admission now.
      const [, b] = await Promise.all([l.adjustTokens('chat', s, -600, a.second), l.admit('chat', s, 1000)]);
      expect(b.allowed).toBe(true);
      expect(l.isDegraded).toBe(true);
      expect(await tokenBuckets('seconds:', 'key:k3')).toEqual({ [s0]: 400, [s0 + 5]: 1000 });
      relay.resume();
      await backInRedis(l);
      expect(await tokenBuckets('seconds:', 'key:k3')).toEqual({ [s0]: 400, [s0 + 5]: 1000 });
      expect(await shared('seconds:', 'key:k3')).toEqual([2, 1400]);
    } finally {
      await relay.stop();
    }
  });
});

describe('RedisRateLimiter: calls ioredis sends again after a reconnect count once', () => {
  it('a hand-over that ran, sent again, changes nothing the second time', async () => {
    const relay = new RedisRelay();
    await relay.start();
    const clock = { t: T0 };
    const l = limiter(relay.url, 'record:', clock, resendingClient(relay.url, 300));
    // Another instance: it admits what this one does not learn of, and halves this one's share.
    const other = limiter(REDIS_URL, 'record:', clock);
    const s: LimitScope[] = [{ id: 'key:k4', quota: { rpm: 10 } }];
    try {
      await waitFor(() => l.connected && other.connected && l.instances === 2, 'both instances to register', 5_000);
      expect((await l.admit('chat', s, 0)).allowed).toBe(true);
      for (let i = 0; i < 8; i++) expect((await other.admit('chat', s, 0)).allowed).toBe(true);

      relay.stall({ newConnectionsToo: true });
      // Redis has room for one of the two (9 used); this instance's share (5, 1 known used) admits both.
      const first = await Promise.all([l.admit('chat', s, 0), l.admit('chat', s, 0)]);
      expect(first.map((d) => d.allowed)).toEqual([true, true]);
      expect(await shared('record:', 'key:k4')).toEqual([10, 0]);
      // After the cool-down the next admission hands over first: Redis runs the hand-over (the turn
      // taken back, the two admitted here added), then the admission (refused there, admitted here).
      await new Promise((r) => setTimeout(r, 60));
      expect((await l.admit('chat', s, 0)).allowed).toBe(true);
      await waitFor(async () => (await shared('record:', 'key:k4'))[0] === 11, 'the hand-over to run', 5_000);

      // The connection drops and comes back: ioredis sends every unanswered command again.
      await relay.stop();
      relay.resume();
      await relay.start();
      await backInRedis(l);
      // Once each: 1 + 8 before, 2 and 1 admitted here during the outage.
      expect(await shared('record:', 'key:k4')).toEqual([12, 0]);
    } finally {
      await relay.stop();
      await closeClients();
    }
  });

  it('an admission call that ran, sent again, is decided once', async () => {
    const relay = new RedisRelay();
    await relay.start();
    const clock = { t: T0 };
    const l = limiter(relay.url, 'turn:', clock, resendingClient(relay.url, 5_000));
    const s: LimitScope[] = [{ id: 'key:k5', quota: { rpm: 10, tpm: 10_000 } }];
    try {
      await waitFor(() => l.connected, 'the limiter to connect', 5_000);
      expect((await l.admit('chat', s, 100)).allowed).toBe(true);
      relay.stall({ newConnectionsToo: true });
      const pending = l.admit('chat', s, 100);
      await waitFor(async () => (await shared('turn:', 'key:k5'))[0] === 2, 'Redis to run the admission', 5_000);
      // Its answer is lost with the connection; ioredis sends the call again on the new one.
      await relay.stop();
      relay.resume();
      await relay.start();
      expect((await pending).allowed).toBe(true);
      await backInRedis(l);
      expect(await shared('turn:', 'key:k5')).toEqual([2, 200]);
    } finally {
      await relay.stop();
      await closeClients();
    }
  });
});
