import { describe, expect, it } from 'vitest';
import type { AuthContext } from '../../src/auth/types.js';
import { formatDuration, type LimitDecision } from '../../src/limits/decision.js';
import { MemoryRateLimiter } from '../../src/limits/memory.js';
import { admitOrThrow, refusalError } from '../../src/limits/refusal.js';
import { scopesFor } from '../../src/limits/scopes.js';
import { GatewayError } from '../../src/core/errors.js';
import type { Account, ApiKeyRecord, RateLimits } from '../../src/store/types.js';

function ctx(keyLimits: RateLimits, accountLimits: RateLimits): AuthContext {
  const account: Account = { id: 'acc1', name: 'a', balance: 0, upstreams: null, limits: accountLimits, createdAt: 0 };
  const key: ApiKeyRecord = {
    id: 'key1', accountId: 'acc1', hash: 'h', prefix: 'sk-gw-x', name: null, models: ['*'],
    actions: ['chat', 'embeddings'], limits: keyLimits, expiresAt: null, revokedAt: null, lastUsedAt: null, createdAt: 0,
  };
  return { account, key };
}

describe('scopesFor', () => {
  it('gives the key and the account scope, each over the family default field by field', () => {
    const scopes = scopesFor(ctx({ chat: { rpm: 5 } }, { chat: { tpm: 0 }, embeddings: { rpm: 9, tpm: 99 } }), 'chat', { rpm: 600, tpm: 200_000 });
    expect(scopes).toEqual([
      { id: 'key:key1', quota: { rpm: 5, tpm: 200_000 } },
      { id: 'account:acc1', quota: { rpm: 600, tpm: 0 } },
    ]);
    const emb = scopesFor(ctx({ chat: { rpm: 5 } }, { embeddings: { rpm: 9, tpm: 99 } }), 'embeddings', { rpm: 3000, tpm: 1_000_000 });
    expect(emb).toEqual([
      { id: 'key:key1', quota: { rpm: 3000, tpm: 1_000_000 } },
      { id: 'account:acc1', quota: { rpm: 9, tpm: 99 } },
    ]);
  });

  it('a per-key limit binds even when the account has room', async () => {
    const limiter = new MemoryRateLimiter({ now: () => 0 });
    const scopes = scopesFor(ctx({ embeddings: { rpm: 1 } }, {}), 'embeddings', { rpm: 100, tpm: 1000 });
    await admitOrThrow(limiter, 'embeddings', scopes, 1);
    await expect(admitOrThrow(limiter, 'embeddings', scopes, 1)).rejects.toMatchObject({ status: 429 });
  });
});

describe('refusalError', () => {
  it('maps a full window to 429 rate_limit_error with Retry-After and the x-ratelimit headers', async () => {
    const limiter = new MemoryRateLimiter({ now: () => 5_000 });
    const scopes = [{ id: 'key:k', quota: { rpm: 1, tpm: 100 } }];
    const ok = await admitOrThrow(limiter, 'chat', scopes, 10);
    expect(ok.headers['x-ratelimit-remaining-requests']).toBe('0');
    const err = await admitOrThrow(limiter, 'chat', scopes, 10).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    const g = err as GatewayError;
    expect(g.status).toBe(429);
    expect(g.type).toBe('rate_limit_error');
    expect(g.code).toBe('rate_limit_exceeded');
    expect(g.headers['retry-after']).toBe('60');
    expect(g.headers['x-ratelimit-limit-requests']).toBe('1');
    expect(g.headers['x-ratelimit-remaining-tokens']).toBe('90');
    expect(g.message).toMatch(/try again in 60s/);
  });

  it('maps a request that can never fit to 400 request_too_large', () => {
    const d: LimitDecision = { allowed: false, reason: 'too_large', retryAfterSeconds: 60, headers: { 'x-ratelimit-limit-tokens': '5' }, message: 'too big' };
    const g = refusalError(d);
    expect(g.status).toBe(400);
    expect(g.type).toBe('invalid_request_error');
    expect(g.code).toBe('request_too_large');
    expect(g.headers['x-ratelimit-limit-tokens']).toBe('5');
    expect(g.headers['retry-after']).toBeUndefined();
  });

  it('still gives a 429 with Retry-After for a bare Admission from any limiter', () => {
    const g = refusalError({ allowed: false, retryAfterSeconds: 7, headers: {} });
    expect(g.status).toBe(429);
    expect(g.headers['retry-after']).toBe('7');
  });
});

describe('formatDuration', () => {
  it('writes durations as OpenAI does', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(250)).toBe('250ms');
    expect(formatDuration(1000)).toBe('1s');
    expect(formatDuration(1500)).toBe('1.5s');
    expect(formatDuration(59_250)).toBe('59.25s');
    expect(formatDuration(60_000)).toBe('1m0s');
    expect(formatDuration(360_000)).toBe('6m0s');
    expect(formatDuration(3_723_000)).toBe('1h2m3s');
    expect(formatDuration(1001)).toBe('1.001s');
    expect(formatDuration(1010)).toBe('1.01s');
    expect(formatDuration(1100)).toBe('1.1s');
    expect(formatDuration(61_050)).toBe('1m1.05s');
    expect(formatDuration(999.6)).toBe('1s');
    expect(formatDuration(-5)).toBe('0s');
    expect(formatDuration(Number.NaN)).toBe('0s');
  });

  it('writes every whole millisecond of the first two hours as the toFixed formula it replaced did', () => {
    // The formula before the whole-number one (toFixed(3) and trailing zeros cut).
    const secs = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(3).replace(/0+$/, ''));
    const reference = (ms: number) => {
      if (ms === 0) return '0s';
      if (ms < 1000) return `${ms}ms`;
      const h = Math.floor(ms / 3_600_000);
      const m = Math.floor((ms % 3_600_000) / 60_000);
      const s = secs((ms % 60_000) / 1000);
      return h > 0 ? `${h}h${m}m${s}s` : m > 0 ? `${m}m${s}s` : `${s}s`;
    };
    const differ: number[] = [];
    for (let ms = 0; ms <= 7_200_000; ms++) if (formatDuration(ms) !== reference(ms)) differ.push(ms);
    expect(differ).toEqual([]);
  });
});
