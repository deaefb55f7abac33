import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { MemoryRateLimiter } from '../../src/limits/memory.js';
import { RedisRateLimiter } from '../../src/limits/redis.js';
import type { LimitDecision } from '../../src/limits/decision.js';
import type { LimitScope } from '../../src/limits/types.js';
import { REDIS_URL, redisTestKeys } from './redis-helper.js';

/**
 * The Redis windows keep a running summary instead of summing their buckets on every check
 * (redis-window-lua.ts). Held here to the in-process limiter, which sums them: on random sequences
 * of admissions (several per turn, so batched, some with corrections in the same turn), corrections,
 * give-backs and clock moves (some longer than the window), every decision, Retry-After and header
 * must be the same.
 */
const T0 = 1_700_000_000_000;
const { prefix, open } = redisTestKeys<RedisRateLimiter>();
const quiet = { warn: () => undefined, info: () => undefined };
/**
 * The command timeout of the limiters whose decisions are compared exactly. The default (500 ms) is
 * measured in this process: held that long by a busy machine, it times a command out, the limiter
 * decides on its local windows for a cool-down, and the comparison fails though Redis answered.
 */
const COMMAND_TIMEOUT_MS = 5_000;


type Step =
  | { kind: 'admit'; scopes: number[]; tokens: number[] }
  | { kind: 'adjust'; scope: number; delta: number }
  | { kind: 'mixed'; scopes: number[]; ops: ({ tokens: number } | { delta: number })[] }
  | { kind: 'release'; scope: number; tokens: number; back: number | null }
  | { kind: 'wait'; ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('admit' as const), scopes: fc.subarray([0, 1, 2], { minLength: 1 }), tokens: fc.array(fc.integer({ min: 0, max: 120 }), { minLength: 1, maxLength: 4 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('adjust' as const), scope: fc.integer({ min: 0, max: 2 }), delta: fc.integer({ min: -150, max: 150 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('mixed' as const), scopes: fc.subarray([0, 1, 2], { minLength: 1 }), ops: fc.array(fc.oneof(fc.record({ tokens: fc.integer({ min: 0, max: 120 }) }), fc.record({ delta: fc.integer({ min: -150, max: 150 }) })), { minLength: 2, maxLength: 5 }) }) },
  // A give-back names its admission's second (`back` seconds ago, some out of the window) or none.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('release' as const), scope: fc.integer({ min: 0, max: 2 }), tokens: fc.integer({ min: 0, max: 100 }), back: fc.option(fc.integer({ min: 0, max: 70 })) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: 15_000 }) }, { weight: 1, arbitrary: fc.integer({ min: 55_000, max: 130_000 }) }) }) },
);

let run = 0;

/** Decisions compared whole: a request too large for a quota included, headers and all. */
const comparable = (d: LimitDecision) => d;

describe('RedisRateLimiter: agrees with the in-process limiter', () => {
  it('on random sequences of batched admissions, corrections, give-backs and clock moves', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ rpm: fc.integer({ min: 0, max: 4 }), tpm: fc.oneof(fc.constant(0), fc.integer({ min: 40, max: 300 })) }), { minLength: 3, maxLength: 3 }),
        fc.array(step, { minLength: 1, maxLength: 60 }),
        async (quotas, steps) => {
          const clock = { t: T0 + 321 };
          const redis = new RedisRateLimiter({ url: REDIS_URL, keyPrefix: `${prefix}${++run}:`, now: () => clock.t, logger: quiet, commandTimeoutMs: COMMAND_TIMEOUT_MS });
          open.push(redis);
          for (let i = 0; i < 100 && !redis.connected; i++) await new Promise((r) => setTimeout(r, 20));
          const memory = new MemoryRateLimiter({ now: () => clock.t });
          const scopes: LimitScope[] = quotas.map((quota, i) => ({ id: `key:s${i}`, quota }));
          for (const s of steps) {
            if (s.kind === 'wait') clock.t += s.ms;
            else if (s.kind === 'admit') {
              const picked = s.scopes.map((i) => scopes[i]!);
              // Asked in one turn: one batch in Redis, one after the other in memory.
              const got = await Promise.all(s.tokens.map((t) => redis.admit('embeddings', picked, t)));
              const want = [];
              for (const t of s.tokens) want.push(await memory.admit('embeddings', picked, t));
              expect(got.map(comparable)).toEqual(want.map(comparable));
            } else if (s.kind === 'mixed') {
              const picked = s.scopes.map((i) => scopes[i]!);
              // Admissions and corrections asked in one turn: one call in Redis, in the order made.
              const asked = s.ops.map((op) => ('tokens' in op ? redis.admit('embeddings', picked, op.tokens) : redis.adjustTokens('embeddings', picked, op.delta)));
              const got = (await Promise.all(asked)).filter((d) => d !== undefined);
              const want = [];
              for (const op of s.ops) {
                if ('tokens' in op) want.push(await memory.admit('embeddings', picked, op.tokens));
                else await memory.adjustTokens('embeddings', picked, op.delta);
              }
              expect(got.map(comparable)).toEqual(want.map(comparable));
            } else if (s.kind === 'adjust') {
              await redis.adjustTokens('embeddings', [scopes[s.scope]!], s.delta);
              await memory.adjustTokens('embeddings', [scopes[s.scope]!], s.delta);
            } else {
              const second = s.back === null ? undefined : Math.floor(clock.t / 1000) - s.back;
              // The headers a give-back returns (for the refused request's answer) agree too.
              const got = await redis.release('embeddings', [scopes[s.scope]!], s.tokens, second);
              expect(got).toEqual(await memory.release('embeddings', [scopes[s.scope]!], s.tokens, second));
            }
          }
          expect(redis.isDegraded).toBe(false);
          await memory.close();
        },
      ),
      {
        numRuns: 100,
        // Buckets leaving the window between two calls less than a window apart (subtracted from the summary).
        examples: [
          [
            [{ rpm: 2, tpm: 100 }, { rpm: 0, tpm: 0 }, { rpm: 1, tpm: 0 }],
            [
              { kind: 'admit', scopes: [0], tokens: [80] },
              { kind: 'wait', ms: 30_000 },
              { kind: 'admit', scopes: [0, 2], tokens: [10, 5] },
              { kind: 'adjust', scope: 0, delta: -12 },
              { kind: 'wait', ms: 31_000 },
              { kind: 'admit', scopes: [0], tokens: [80, 3, 1] },
            ],
          ],
        ],
      },
    );
  }, 120_000);

  it('reads a window written in the earlier layout (buckets only) exactly', async () => {
    const clock = { t: T0 };
    const p = `${prefix}old:`;
    const l = new RedisRateLimiter({ url: REDIS_URL, keyPrefix: p, now: () => clock.t, logger: quiet, commandTimeoutMs: COMMAND_TIMEOUT_MS });
    open.push(l);
    for (let i = 0; i < 100 && !l.connected; i++) await new Promise((r) => setTimeout(r, 20));
    const sec = Math.floor(T0 / 1000);
    const r = new Redis(REDIS_URL);
    // 2 requests and 70 tokens in the window, 5 requests that already left it.
    await r.hset(`${p}rl:{chat}:w2:key:old`, `r${sec - 10}`, 1, `t${sec - 10}`, 30, `r${sec}`, 1, `t${sec}`, 40, `r${sec - 70}`, 5);
    r.disconnect();
    const s: LimitScope[] = [{ id: 'key:old', quota: { rpm: 3, tpm: 100 } }];
    const d = await l.admit('chat', s, 30);
    expect(d.allowed).toBe(true);
    expect(d.headers['x-ratelimit-remaining-requests']).toBe('0');
    expect(d.headers['x-ratelimit-remaining-tokens']).toBe('0');
    const refused = await l.admit('chat', s, 1);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterSeconds).toBe(50); // the bucket of 10 s ago leaves first
  });
});
