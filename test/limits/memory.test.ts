import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MemoryRateLimiter } from '../../src/limits/memory.js';
import type { LimitDecision } from '../../src/limits/decision.js';
import type { LimitScope, Quota } from '../../src/limits/types.js';

/** A second boundary, so expected waits are easy to read. */
const T0 = 1_700_000_000_000;

function setup(start = T0) {
  const clock = { t: start };
  const limiter = new MemoryRateLimiter({ now: () => clock.t });
  return { clock, limiter };
}

const key = (quota: Quota, id = 'k1'): LimitScope => ({ id: `key:${id}`, quota });
const account = (quota: Quota, id = 'a1'): LimitScope => ({ id: `account:${id}`, quota });

describe('MemoryRateLimiter: requests per minute', () => {
  it('refuses the request after the last allowed one with Retry-After until the first leaves', async () => {
    const { clock, limiter } = setup();
    const scopes = [key({ rpm: 3 })];
    for (let i = 0; i < 3; i++) expect((await limiter.admit('chat', scopes, 0)).allowed).toBe(true);
    const refused = (await limiter.admit('chat', scopes, 0)) as LimitDecision;
    expect(refused.allowed).toBe(false);
    expect(refused.reason).toBe('requests');
    expect(refused.retryAfterSeconds).toBe(60);
    expect(refused.message).toMatch(/requests per minute .* this API key: limit 3, used 3/);
  });

  it('shrinks the Retry-After as time passes and admits once the window slides', async () => {
    const { clock, limiter } = setup();
    const scopes = [key({ rpm: 2 })];
    await limiter.admit('chat', scopes, 0);
    clock.t += 10_000;
    await limiter.admit('chat', scopes, 0);
    clock.t += 20_000; // 30 s after the first request
    expect((await limiter.admit('chat', scopes, 0)).retryAfterSeconds).toBe(30);
    clock.t += 29_500; // 0.5 s before the first request leaves: rounded up, never 0
    expect((await limiter.admit('chat', scopes, 0)).retryAfterSeconds).toBe(1);
    clock.t += 500;
    expect((await limiter.admit('chat', scopes, 0)).allowed).toBe(true);
    // Now the second request (t0+10 s) and the third (t0+60 s) fill the window: wait for the second.
    const next = await limiter.admit('chat', scopes, 0);
    expect(next.allowed).toBe(false);
    expect(next.retryAfterSeconds).toBe(10);
  });

  it('rounds a wait that is not whole seconds up', async () => {
    const { clock, limiter } = setup(T0 + 400);
    const scopes = [key({ rpm: 1 })];
    await limiter.admit('chat', scopes, 0);
    clock.t = T0 + 25_100;
    // The first request leaves at T0 + 60 s, 34.9 s from now.
    expect((await limiter.admit('chat', scopes, 0)).retryAfterSeconds).toBe(35);
  });

  it('does not count refused requests', async () => {
    const { clock, limiter } = setup();
    const scopes = [key({ rpm: 1 })];
    await limiter.admit('chat', scopes, 0);
    for (let i = 0; i < 5; i++) expect((await limiter.admit('chat', scopes, 0)).allowed).toBe(false);
    clock.t += 60_000;
    expect((await limiter.admit('chat', scopes, 0)).allowed).toBe(true);
    expect((await limiter.admit('chat', scopes, 0)).allowed).toBe(false);
  });

  it('shares an account quota between its keys, and names the account in the refusal', async () => {
    const { limiter } = setup();
    const acct = account({ rpm: 3 });
    const k1 = [key({ rpm: 10 }, 'k1'), acct];
    const k2 = [key({ rpm: 10 }, 'k2'), acct];
    expect((await limiter.admit('chat', k1, 0)).allowed).toBe(true);
    expect((await limiter.admit('chat', k2, 0)).allowed).toBe(true);
    expect((await limiter.admit('chat', k1, 0)).allowed).toBe(true);
    const refused = (await limiter.admit('chat', k2, 0)) as LimitDecision;
    expect(refused.allowed).toBe(false);
    expect(refused.message).toContain('this account');
  });

  it('consumes from no scope when one of them refuses', async () => {
    const { limiter } = setup();
    const acct = account({ rpm: 100 });
    const tight = [key({ rpm: 1 }, 'tight'), acct];
    await limiter.admit('chat', tight, 0);
    await limiter.admit('chat', tight, 0); // refused by the key
    const other = await limiter.admit('chat', [key({ rpm: 100 }, 'other'), acct], 0);
    // The account saw two admitted requests (the refused one was not counted): 100 - 2.
    expect(other.headers['x-ratelimit-remaining-requests']).toBe('98');
  });

  it('treats 0 and absent quotas as unlimited', async () => {
    const { limiter } = setup();
    for (let i = 0; i < 1000; i++) {
      const a = await limiter.admit('chat', [key({ rpm: 0, tpm: 0 }), account({})], 10_000);
      expect(a.allowed).toBe(true);
      expect(a.headers).toEqual({});
    }
  });
});

describe('MemoryRateLimiter: tokens per minute', () => {
  it('refuses once the tokens would pass the limit, with the wait until enough tokens leave', async () => {
    const { clock, limiter } = setup();
    const scopes = [key({ tpm: 1000 })];
    expect((await limiter.admit('embeddings', scopes, 600)).allowed).toBe(true);
    clock.t += 20_000;
    expect((await limiter.admit('embeddings', scopes, 400)).allowed).toBe(true);
    clock.t += 5_000;
    const refused = (await limiter.admit('embeddings', scopes, 100)) as LimitDecision;
    expect(refused.allowed).toBe(false);
    expect(refused.reason).toBe('tokens');
    expect(refused.retryAfterSeconds).toBe(35); // the 600 leave at T0+60 s
    expect(refused.message).toMatch(/tokens per minute \(TPM\).*limit 1000, used 1000, requested 100/);
    // Needing more than the first bucket holds means waiting for the second one too.
    const bigger = await limiter.admit('embeddings', scopes, 700);
    expect(bigger.retryAfterSeconds).toBe(55);
    clock.t = T0 + 60_000;
    expect((await limiter.admit('embeddings', scopes, 600)).allowed).toBe(true);
  });

  it('refuses a request that alone exceeds the limit as never fitting, consuming nothing', async () => {
    const { limiter } = setup();
    const scopes = [key({ rpm: 5, tpm: 1000 })];
    const a = (await limiter.admit('chat', scopes, 1001)) as LimitDecision;
    expect(a.allowed).toBe(false);
    expect(a.reason).toBe('too_large');
    expect(a.message).toMatch(/needs 1001 tokens .* 1000 tokens per minute/);
    const ok = await limiter.admit('chat', scopes, 1000);
    expect(ok.allowed).toBe(true);
    expect(ok.headers['x-ratelimit-remaining-requests']).toBe('4');
  });

  it('corrects an admission with the usage reported afterwards', async () => {
    const { clock, limiter } = setup();
    const scopes = [key({ tpm: 1000 }), account({ tpm: 5000 })];
    await limiter.admit('chat', scopes, 800);
    expect((await limiter.admit('chat', scopes, 800)).allowed).toBe(false);
    await limiter.adjustTokens('chat', scopes, -700); // only 100 were really used
    clock.t += 3_000;
    const a = await limiter.admit('chat', scopes, 800);
    expect(a.allowed).toBe(true);
    expect(a.headers['x-ratelimit-remaining-tokens']).toBe('100');
    await limiter.adjustTokens('chat', scopes, 50); // and a little more than estimated here
    const b = await limiter.admit('chat', scopes, 60);
    expect(b.allowed).toBe(false);
  });

  it('never lets a correction push the window below zero', async () => {
    const { limiter } = setup();
    const scopes = [key({ tpm: 1000 })];
    await limiter.admit('chat', scopes, 100);
    await limiter.adjustTokens('chat', scopes, -5000);
    const a = await limiter.admit('chat', scopes, 1000);
    expect(a.allowed).toBe(true);
    expect(a.headers['x-ratelimit-remaining-tokens']).toBe('0');
  });
});

describe('MemoryRateLimiter: families are separate', () => {
  it('a burst that exhausts chat leaves embeddings untouched, and the reverse', async () => {
    const { limiter } = setup();
    const scopes = [key({ rpm: 2, tpm: 100 }), account({ rpm: 2, tpm: 100 })];
    await limiter.admit('chat', scopes, 10);
    await limiter.admit('chat', scopes, 10);
    expect((await limiter.admit('chat', scopes, 10)).allowed).toBe(false);
    const emb = await limiter.admit('embeddings', scopes, 100);
    expect(emb.allowed).toBe(true);
    expect(emb.headers['x-ratelimit-remaining-requests']).toBe('1');
    expect((await limiter.admit('embeddings', scopes, 1)).allowed).toBe(false); // tokens now exhausted
    const { limiter: l2 } = setup();
    await l2.admit('embeddings', scopes, 100);
    expect((await l2.admit('embeddings', scopes, 1)).allowed).toBe(false);
    expect((await l2.admit('chat', scopes, 100)).allowed).toBe(true);
  });
});

describe('MemoryRateLimiter: headers', () => {
  it('reports the tightest scope the way OpenAI does', async () => {
    const { clock, limiter } = setup();
    const scopes = [key({ rpm: 10, tpm: 10_000 }), account({ rpm: 3, tpm: 50_000 })];
    const a = await limiter.admit('chat', scopes, 100);
    expect(a.headers).toEqual({
      'x-ratelimit-limit-requests': '3',
      'x-ratelimit-remaining-requests': '2',
      'x-ratelimit-reset-requests': '1m0s',
      'x-ratelimit-limit-tokens': '10000',
      'x-ratelimit-remaining-tokens': '9900',
      'x-ratelimit-reset-tokens': '1m0s',
    });
    clock.t += 1_500;
    const b = await limiter.admit('chat', scopes, 0);
    expect(b.headers['x-ratelimit-reset-requests']).toBe('59.5s'); // the newest request counts until T0+61 s
    expect(b.headers['x-ratelimit-reset-tokens']).toBe('58.5s'); // the newest tokens were spent at T0
    expect(b.headers['x-ratelimit-remaining-requests']).toBe('1');
  });
});

describe('MemoryRateLimiter: memory', () => {
  it('drops windows that have been idle for a minute', async () => {
    const { clock, limiter } = setup();
    for (let i = 0; i < 200; i++) await limiter.admit('chat', [key({ rpm: 5 }, `k${i}`)], 1);
    expect(limiter.windowCount).toBe(200);
    clock.t += 120_000;
    await limiter.admit('chat', [key({ rpm: 5 }, 'fresh')], 1);
    expect(limiter.windowCount).toBe(1);
  });
});

/** A deliberately naive model of the same semantics: a list of events, each counting for 60 whole seconds. */
class ReferenceLimiter {
  private events: { sec: number; tokens: number }[] = [];
  admit(nowMs: number, rpm: number, tpm: number, tokens: number): { allowed: boolean; retry: number } {
    const sec = Math.floor(nowMs / 1000);
    this.events = this.events.filter((e) => e.sec > sec - 60);
    const usedR = this.events.length;
    const usedT = this.events.reduce((n, e) => n + e.tokens, 0);
    if (tpm > 0 && tokens > tpm) return { allowed: false, retry: 60 };
    let wait = -1;
    // Try each future second until the request fits; the retry is the first that works.
    const fits = (at: number) => {
      const live = this.events.filter((e) => e.sec > at - 60);
      const r = live.length;
      const t = live.reduce((n, e) => n + e.tokens, 0);
      return (rpm === 0 || r + 1 <= rpm) && (tpm === 0 || t + Math.max(tokens, 1) <= tpm);
    };
    if ((rpm === 0 || usedR + 1 <= rpm) && (tpm === 0 || usedT + Math.max(tokens, 1) <= tpm)) {
      this.events.push({ sec, tokens });
      return { allowed: true, retry: 0 };
    }
    for (let s = sec + 1; s <= sec + 60; s++) {
      if (fits(s)) {
        wait = s * 1000 - nowMs;
        break;
      }
    }
    return { allowed: false, retry: Math.max(1, Math.ceil(wait / 1000)) };
  }
}

describe('MemoryRateLimiter: agrees with a naive model', () => {
  it('on random sequences of requests and clock moves', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 50, max: 500 }),
        fc.array(fc.record({ advanceMs: fc.integer({ min: 0, max: 15_000 }), tokens: fc.integer({ min: 0, max: 200 }) }), {
          minLength: 1,
          maxLength: 60,
        }),
        async (rpm, tpm, steps) => {
          const { clock, limiter } = setup(T0 + 123);
          const ref = new ReferenceLimiter();
          for (const step of steps) {
            clock.t += step.advanceMs;
            const got = await limiter.admit('chat', [key({ rpm, tpm })], step.tokens);
            const want = ref.admit(clock.t, rpm, tpm, step.tokens);
            expect(got.allowed).toBe(want.allowed);
            if (!want.allowed) expect(got.retryAfterSeconds).toBe(want.retry);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('MemoryRateLimiter on its default clock', () => {
  it('is not frozen by a wall clock set back: the window counts elapsed time', async () => {
    const realNow = Date.now;
    let step = 0;
    // In place before the limiter exists, so that whatever clock it takes sees the step.
    Date.now = () => realNow() + step;
    try {
      const limiter = new MemoryRateLimiter();
      const scopes = [key({ rpm: 2 }, 'wall')];
      for (let i = 0; i < 2; i++) expect((await limiter.admit('chat', scopes, 0)).allowed).toBe(true);
      // NTP steps the wall clock back an hour.
      step = -3_600_000;
      const refused = (await limiter.admit('chat', scopes, 0)) as LimitDecision;
      expect(refused.allowed).toBe(false);
      // Still the minute the window holds, not the hour plus the minute.
      expect(refused.retryAfterSeconds).toBeGreaterThan(0);
      expect(refused.retryAfterSeconds).toBeLessThanOrEqual(60);
    } finally {
      Date.now = realNow;
    }
  });
});

describe('MemoryRateLimiter: corrections name the admission they correct', () => {
  it('takes tokens back from the corrected admission\'s second, not from later requests', async () => {
    const { clock, limiter } = setup();
    const scopes = [key({ tpm: 100_000 }, 'corr1')];
    clock.t = T0 + 10_000;
    const a = await limiter.admit('embeddings', scopes, 50_000);
    clock.t = T0 + 30_000;
    expect((await limiter.admit('embeddings', scopes, 50_000)).allowed).toBe(true);
    clock.t = T0 + 31_000;
    await limiter.adjustTokens('embeddings', scopes, -50_000, a.second);
    // At 70 s the first admission's second has left; the second admission's 50,000 are still in.
    clock.t = T0 + 70_000;
    expect((await limiter.admit('embeddings', scopes, 100_000)).allowed).toBe(false);
    expect((await limiter.admit('embeddings', scopes, 50_000)).allowed).toBe(true);
  });

  it('gives nothing back for an admission whose second already left the window (a long stream)', async () => {
    const { clock, limiter } = setup();
    const scopes = [key({ tpm: 100_000 }, 'corr2')];
    const stream = await limiter.admit('chat', scopes, 90_000);
    clock.t = T0 + 61_000;
    expect((await limiter.admit('chat', scopes, 100_000)).allowed).toBe(true);
    // The stream ends having used 10 tokens: its -89,990 must not come out of the minute now full.
    await limiter.adjustTokens('chat', scopes, -89_990, stream.second);
    expect((await limiter.admit('chat', scopes, 10)).allowed).toBe(false);
  });
});
