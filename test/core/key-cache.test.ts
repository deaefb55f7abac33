import { describe, expect, it } from 'vitest';
import { Authenticator, KEY_CACHE_TTL_MS } from '../../src/auth/authenticator.js';
import { generateKey, hashKey } from '../../src/auth/keys.js';
import type { Account, ApiKeyRecord, Store } from '../../src/store/types.js';

/**
 * The key cache: under steady traffic no request waits for the store (the lookup is refreshed in
 * the background past half the cache's lifetime), and nothing older than the lifetime is served.
 */
function fixture() {
  const key = generateKey();
  const account: Account = { id: 'acct', name: 'acct', balance: 0, upstreams: null, limits: {}, createdAt: 0 } as Account;
  const record = { id: 'k1', accountId: 'acct', hash: hashKey(key), prefix: 'sk-gw-x', name: null, models: ['*'], actions: [], limits: {}, expiresAt: null, revokedAt: null, lastUsedAt: null, createdAt: 0 } as unknown as ApiKeyRecord;
  let now = 0;
  let lookups = 0;
  let hang: Promise<never> | undefined;
  let revoked = false;
  const store = {
    findKeyByHash: async (h: string) => {
      lookups++;
      if (hang) return hang;
      return h === record.hash ? { ...record, revokedAt: revoked ? 1 : null } : undefined;
    },
    getAccount: async () => account,
    touchKey: async () => undefined,
  } as unknown as Store;
  const auth = new Authenticator(store, { now: () => now });
  return {
    auth,
    header: `Bearer ${key}`,
    at: (t: number) => (now = t),
    lookups: () => lookups,
    revoke: () => (revoked = true),
    stall: () => (hang = new Promise<never>(() => undefined)),
    unstall: () => (hang = undefined),
  };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('key cache', () => {
  it('past half its lifetime answers from the cache while the lookup runs in the background', async () => {
    const f = fixture();
    await f.auth.authenticate(f.header);
    expect(f.lookups()).toBe(1);
    f.at(KEY_CACHE_TTL_MS / 2 - 1);
    await f.auth.authenticate(f.header);
    expect(f.lookups()).toBe(1);
    // The store stops answering: a request past half the lifetime still gets its answer at once.
    f.stall();
    f.at(KEY_CACHE_TTL_MS / 2 + 1);
    await f.auth.authenticate(f.header);
    await f.auth.authenticate(f.header); // one background lookup at a time
    expect(f.lookups()).toBe(2);
  });

  it('a revoke in the store is seen by the first request after the lifetime, and by the refresh before that', async () => {
    const f = fixture();
    await f.auth.authenticate(f.header);
    f.revoke();
    f.at(KEY_CACHE_TTL_MS / 2 + 1);
    await f.auth.authenticate(f.header); // served from the cache; the refresh reads the revoke
    await settle();
    await expect(f.auth.authenticate(f.header)).rejects.toMatchObject({ status: 401 });
  });

  it('never serves an answer older than the lifetime, even when the background refresh is stuck', async () => {
    const f = fixture();
    await f.auth.authenticate(f.header);
    f.stall();
    f.at(KEY_CACHE_TTL_MS / 2 + 1);
    await f.auth.authenticate(f.header);
    f.revoke();
    f.unstall();
    f.at(KEY_CACHE_TTL_MS + 1);
    await expect(f.auth.authenticate(f.header)).rejects.toMatchObject({ status: 401 });
  });
});

describe('key cache after an idle spell', () => {
  it('answers the requests of a burst with one lookup when the cache has expired', async () => {
    const f = fixture();
    await f.auth.authenticate(f.header);
    f.at(KEY_CACHE_TTL_MS + 1);
    const burst = await Promise.all(Array.from({ length: 20 }, () => f.auth.authenticate(f.header)));
    expect(burst.every((ctx) => ctx.key.id === 'k1')).toBe(true);
    expect(f.lookups()).toBe(2);
  });

  it('does not let a request after a revoke on this instance join a lookup from before it', async () => {
    const f = fixture();
    await f.auth.authenticate(f.header);
    f.at(KEY_CACHE_TTL_MS + 1);
    const before = f.auth.authenticate(f.header);
    f.revoke();
    f.auth.invalidate();
    const after = f.auth.authenticate(f.header);
    await expect(before).resolves.toBeDefined();
    await expect(after).rejects.toMatchObject({ status: 401 });
    expect(f.lookups()).toBe(3);
  });

  it('does not join a lookup that started longer ago than the lifetime (a stalled store)', async () => {
    const f = fixture();
    await f.auth.authenticate(f.header);
    f.stall();
    f.at(KEY_CACHE_TTL_MS + 1);
    void f.auth.authenticate(f.header).catch(() => undefined);
    f.unstall();
    f.revoke();
    f.at(2 * KEY_CACHE_TTL_MS + 2);
    await expect(f.auth.authenticate(f.header)).rejects.toMatchObject({ status: 401 });
    expect(f.lookups()).toBe(3);
  });
});
