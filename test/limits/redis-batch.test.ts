import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { RedisRateLimiter, type LimiterLogger } from '../../src/limits/redis.js';
import { MAX_BATCH } from '../../src/limits/redis-batch.js';
import type { LimitDecision } from '../../src/limits/decision.js';
import type { LimitScope, Quota } from '../../src/limits/types.js';
import { dropPrefix, ensureRedis, REDIS_URL, RedisRelay, uniquePrefix } from './redis-helper.js';

/**
 * The Redis limiter sends the admissions (and the token corrections) of one event-loop turn as one
 * script call. These tests hold it to deciding them exactly as one call each would, in order.
 */
const T0 = 1_700_000_000_000;
const prefix = uniquePrefix();
const open: RedisRateLimiter[] = [];
const quiet: LimiterLogger = { warn: () => undefined, info: () => undefined };
/**
 * The command timeout of the limiters whose decisions are compared exactly (the stall cases set their own). The default (500 ms) is
 * measured in this process: held that long by a busy machine, it times a command out, the limiter
 * decides on its local windows for a cool-down, and the comparison fails though Redis answered.
 */
const COMMAND_TIMEOUT_MS = 5_000;

function limiter(clock: { t: number }, opts: { url?: string; commandTimeoutMs?: number; sub?: string; correctionWaitMs?: number } = {}) {
  const l = new RedisRateLimiter({
    url: opts.url ?? REDIS_URL,
    keyPrefix: prefix + (opts.sub ?? ''),
    now: () => clock.t,
    logger: quiet,
    commandTimeoutMs: opts.commandTimeoutMs ?? COMMAND_TIMEOUT_MS,
    coolDownMs: 50,
    correctionWaitMs: opts.correctionWaitMs,
  });
  open.push(l);
  return l;
}

async function ready(l: RedisRateLimiter): Promise<void> {
  for (let i = 0; i < 100 && !l.connected; i++) await new Promise((r) => setTimeout(r, 20));
  if (!l.connected) throw new Error('limiter never connected');
}

/** Counts the script calls the limiter makes (its client carries the scripts as commands). */
function spyCalls(l: RedisRateLimiter) {
  const client = (l as unknown as { redis: Record<string, (...a: unknown[]) => unknown> }).redis;
  return vi.spyOn(client, 'rlTurn');
}

const nextTurn = () => new Promise((r) => setImmediate(r));

let n = 0;
const scope = (quota: Quota, kind = 'key'): LimitScope => ({ id: `${kind}:b${++n}`, quota });

beforeAll(async () => {
  await ensureRedis();
});

afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(open.splice(0).map((l) => l.close()));
});

afterAll(async () => {
  await dropPrefix(prefix);
});

describe('RedisRateLimiter: admissions of one turn in one call', () => {
  it('decides them in the order they were made, with the headers each would have had alone', async () => {
    const l = limiter({ t: T0 });
    await ready(l);
    const calls = spyCalls(l);
    const s = [scope({ rpm: 3 }), scope({ rpm: 10 }, 'account')];
    const got = (await Promise.all(Array.from({ length: 5 }, () => l.admit('chat', s, 0)))) as LimitDecision[];
    expect(calls).toHaveBeenCalledTimes(1);
    expect(got.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    expect(got.map((d) => d.headers['x-ratelimit-remaining-requests'])).toEqual(['2', '1', '0', '0', '0']);
    expect(got[3]!.reason).toBe('requests');
    expect(got[3]!.retryAfterSeconds).toBe(60);
    expect(got[3]!.message).toMatch(/this API key: limit 3, used 3/);
  });

  it('lets a refusal in the middle of a batch consume nothing', async () => {
    const l = limiter({ t: T0 + 250 });
    await ready(l);
    const s = [scope({ tpm: 100 })];
    const [a, b, c] = (await Promise.all([l.admit('embeddings', s, 60), l.admit('embeddings', s, 50), l.admit('embeddings', s, 40)])) as LimitDecision[];
    expect([a!.allowed, b!.allowed, c!.allowed]).toEqual([true, false, true]);
    expect(b!.reason).toBe('tokens');
    expect(a!.headers['x-ratelimit-remaining-tokens']).toBe('40');
    expect(c!.headers['x-ratelimit-remaining-tokens']).toBe('0');
    expect((await l.admit('embeddings', s, 1)).allowed).toBe(false);
  });

  it('waits for the end of the turn and no longer; later turns get calls of their own', async () => {
    const l = limiter({ t: T0 });
    await ready(l);
    const calls = spyCalls(l);
    const s = [scope({ rpm: 100 })];
    const first = [l.admit('chat', s, 0), l.admit('chat', s, 0)];
    expect(calls).not.toHaveBeenCalled(); // gathered during this turn...
    await nextTurn();
    expect(calls).toHaveBeenCalledTimes(1); // ...and sent when it ends
    await Promise.all(first);
    await l.admit('chat', s, 0);
    expect(calls).toHaveBeenCalledTimes(2);
  });

  it('keeps families apart (one call each) and splits a turn larger than a batch, in order', async () => {
    const l = limiter({ t: T0 });
    await ready(l);
    const calls = spyCalls(l);
    const s = [scope({ rpm: MAX_BATCH + 1 })];
    const chat = Array.from({ length: MAX_BATCH + 2 }, () => l.admit('chat', s, 0));
    const video = l.admit('video', s, 0);
    const got = await Promise.all(chat);
    expect((await video).allowed).toBe(true); // its own family's window
    expect(calls).toHaveBeenCalledTimes(3);
    expect(got.filter((d) => d.allowed)).toHaveLength(MAX_BATCH + 1);
    expect(got[MAX_BATCH + 1]!.allowed).toBe(false);
  });

  it('decides a whole batch locally, in order, when Redis stops answering while it is in flight', async () => {
    const relay = new RedisRelay();
    await relay.start();
    const l = limiter({ t: T0 }, { url: relay.url, commandTimeoutMs: 100, sub: 'midbatch:' });
    await ready(l);
    const s = [scope({ rpm: 3 })];
    try {
      expect((await l.admit('chat', s, 0)).allowed).toBe(true); // shared window: 1 used
      relay.stall();
      const got = await Promise.all(Array.from({ length: 4 }, () => l.admit('chat', s, 0)));
      expect(l.isDegraded).toBe(true);
      // The local window continues from the 1 Redis reported: 2 more fit, in the order asked.
      expect(got.map((d) => d.allowed)).toEqual([true, true, false, false]);
    } finally {
      await relay.stop();
    }
  });
});

describe('RedisRateLimiter: a batch whose local decision throws', () => {
  it('answers every caller of the batch with the error: none hangs, nothing escapes unhandled', async () => {
    const relay = new RedisRelay();
    await relay.start();
    const l = limiter({ t: T0 }, { url: relay.url, commandTimeoutMs: 100, sub: 'throws:' });
    await ready(l);
    const s = [scope({ rpm: 100 })];
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      relay.stall();
      vi.spyOn(l.fallback, 'admit').mockImplementation(() => {
        throw new Error('local windows broke');
      });
      const got = await Promise.allSettled(Array.from({ length: 3 }, () => l.admit('chat', s, 0)));
      expect(got.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
      expect((got[0] as PromiseRejectedResult).reason).toBeInstanceOf(Error);
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await relay.stop();
    }
  });
});

/** A limiter with `used` tokens of a 100-TPM key already admitted, and a spy on its later script calls. */
async function primed(used: number, opts: { correctionWaitMs?: number } = {}) {
  const l = limiter({ t: T0 }, opts);
  await ready(l);
  const s = [scope({ tpm: 100 })];
  expect((await l.admit('embeddings', s, used)).allowed).toBe(true);
  return { l, s, calls: spyCalls(l) };
}

describe('RedisRateLimiter: token corrections of one turn in the same call', () => {
  it('applies them in order, as separate calls would (a take-back never goes below zero)', async () => {
    const { l, s, calls } = await primed(50);
    // -80 empties the window (not below zero), then +30: 30 used. Summed first (-50) it would be 0.
    await Promise.all([l.adjustTokens('embeddings', s, -80), l.adjustTokens('embeddings', s, 30)]);
    expect(calls).toHaveBeenCalledTimes(1);
    expect((await l.admit('embeddings', s, 71)).allowed).toBe(false);
    expect((await l.admit('embeddings', s, 70)).allowed).toBe(true);
  });

  it('shares the call with the admissions of the same turn, each applied in the order it was made', async () => {
    const { l, s, calls } = await primed(50);
    // 50 + 40 = 90; the correction takes 50 back (40); then 40 + 50 = 90 fits. Corrections applied
    // after the turn's admissions would refuse the second one (90 + 50 > 100).
    const first = l.admit('embeddings', s, 40);
    const correction = l.adjustTokens('embeddings', s, -50);
    const second = l.admit('embeddings', s, 50);
    const [a, , b] = await Promise.all([first, correction, second]);
    expect(calls).toHaveBeenCalledTimes(1);
    expect([a!.allowed, b!.allowed]).toEqual([true, true]);
    expect(a!.headers['x-ratelimit-remaining-tokens']).toBe('10');
    expect(b!.headers['x-ratelimit-remaining-tokens']).toBe('10');
  });

  it('lets a correction wait for the next admission and ride in its call', async () => {
    // A wait far longer than two event-loop turns can take on a loaded machine.
    const { l, s, calls } = await primed(90, { correctionWaitMs: 5_000 });
    // The answer used 30, not 90: the correction is queued in one turn, the next admission comes later.
    const correction = l.adjustTokens('embeddings', s, -60);
    await nextTurn();
    await nextTurn();
    expect(calls).toHaveBeenCalledTimes(0);
    // Sent with the admission and applied before it: 30 + 70 fits; without the correction it would not.
    const next = await l.admit('embeddings', s, 70);
    await correction;
    expect(calls).toHaveBeenCalledTimes(1);
    expect(next.allowed).toBe(true);
  });

  it('sends a correction on its own when no admission comes within the wait, and at close', async () => {
    const { l, s, calls } = await primed(90);
    await l.adjustTokens('embeddings', s, -60);
    expect(calls).toHaveBeenCalledTimes(1);
    // A correction still waiting when the limiter closes is sent before the connection ends.
    const last = l.adjustTokens('embeddings', s, -30);
    await l.close();
    await last;
    expect(calls).toHaveBeenCalledTimes(2);
    const other = limiter({ t: T0 });
    await ready(other);
    // 90 - 60 - 30 = 0 used: the whole quota is free again.
    expect((await other.admit('embeddings', s, 100)).allowed).toBe(true);
  });

  it('applies them to the local windows when Redis fails', async () => {
    const relay = new RedisRelay();
    await relay.start();
    const l = limiter({ t: T0 }, { url: relay.url, commandTimeoutMs: 100, sub: 'adjust-down:' });
    await ready(l);
    const s = [scope({ tpm: 100 })];
    try {
      expect((await l.admit('embeddings', s, 10)).allowed).toBe(true);
      relay.stall();
      await Promise.all([l.adjustTokens('embeddings', s, 60), l.adjustTokens('embeddings', s, 20)]);
      expect(l.isDegraded).toBe(true);
      // Locally: 10 learned from Redis + 80 corrected = 90.
      expect((await l.admit('embeddings', s, 11)).allowed).toBe(false);
      expect((await l.admit('embeddings', s, 10)).allowed).toBe(true);
    } finally {
      await relay.stop();
    }
  });
});
