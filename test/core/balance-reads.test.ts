import { describe, expect, it } from 'vitest';
import { Reservations } from '../../src/billing/reservations.js';
import type { Account, Store } from '../../src/store/types.js';

/** The balance view: the requests of a burst after an idle spell share one read of the store. */
function fixture(balance: number) {
  let now = 0;
  let reads = 0;
  let hang: Promise<never> | undefined;
  const account = { id: 'acct', balance } as Account;
  const store = {
    getAccount: async () => {
      reads++;
      if (hang) return hang;
      return { ...account };
    },
  } as unknown as Pick<Store, 'getAccount'>;
  return {
    reservations: new Reservations(store, () => now),
    at: (t: number) => (now = t),
    reads: () => reads,
    setBalance: (b: number) => (account.balance = b),
    stall: () => (hang = new Promise<never>(() => undefined)),
    unstall: () => (hang = undefined),
  };
}

describe('balance reads', () => {
  it('one read serves every request of a burst that finds the view expired, and the in-flight sums still count', async () => {
    const f = fixture(900);
    const first = await f.reservations.reserve('acct', 100);
    first!(0);
    f.at(5_000);
    // Eleven requests of 100 against 900: all see the same read, the last two are refused.
    const burst = await Promise.all(Array.from({ length: 11 }, () => f.reservations.reserve('acct', 100)));
    expect(f.reads()).toBe(2);
    expect(burst.filter((r) => r !== undefined)).toHaveLength(9);
  });

  it('does not join a read that started longer ago than the view lifetime (a stalled store)', async () => {
    const f = fixture(1_000);
    await f.reservations.reserve('acct', 100);
    f.stall();
    f.at(5_000);
    void f.reservations.reserve('acct', 100);
    f.unstall();
    f.setBalance(0);
    f.at(6_001);
    expect(await f.reservations.reserve('acct', 100)).toBeUndefined();
    expect(f.reads()).toBe(3);
  });

  it('forgetting the balances (a top-up here) drops a read in flight: its waiter shares the read issued after', async () => {
    const f = fixture(0);
    await f.reservations.reserve('acct', 100);
    f.at(5_000);
    const before = f.reservations.reserve('acct', 100);
    f.setBalance(1_000);
    f.reservations.forgetBalances();
    expect(await f.reservations.reserve('acct', 100)).toBeDefined();
    // The read it waited on saw 0; the one issued after the top-up holds the 1000.
    expect(await before).toBeDefined();
    expect(f.reads()).toBe(3);
  });
});
