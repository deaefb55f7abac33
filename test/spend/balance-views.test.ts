import { describe, expect, it } from 'vitest';
import { Reservations } from '../../src/billing/reservations.js';
import type { Account } from '../../src/store/types.js';

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { opened, open };
}

/**
 * A store whose reads see the balance when they are issued and answer when `hold` lets them: a read
 * that ran before a write committed, answered after the process heard the write had landed.
 */
function lateStore(start: number) {
  const s = {
    balance: start,
    hold: undefined as Promise<void> | undefined,
    async getAccount(id: string): Promise<Account | undefined> {
      const balance = s.balance;
      if (s.hold) await s.hold;
      return { id, balance } as Account;
    },
  };
  return s;
}

describe('balance views around forgetBalances (an admin change on this instance)', () => {
  it('a read issued before the views were dropped does not decide: a charge that landed meanwhile is counted', async () => {
    const store = lateStore(100);
    let now = 0;
    const r = new Reservations(store, () => now);
    const first = (await r.reserve('a', 60))!;
    const write = gate();
    first(60, write.opened); // acknowledged, its write on its way
    now = 1_000; // the view has expired: the next request reads
    const answer = gate();
    store.hold = answer.opened;
    const next = r.reserve('a', 50); // its read runs now, before the charge is in the store
    r.forgetBalances();
    store.balance = 40; // the charge commits, and the process hears of it
    write.open();
    await write.opened;
    await Promise.resolve();
    store.hold = undefined;
    answer.open(); // the read answers the 100 it saw
    expect(await next).toBeUndefined();
    expect(await r.reserve('a', 41)).toBeUndefined();
    expect(await r.reserve('a', 40)).toBeDefined();
  });
});

describe('a release called twice', () => {
  it('counts its charge once, also for a request that reserved nothing (a free model)', async () => {
    const r = new Reservations(lateStore(100), () => 0);
    const never = new Promise<void>(() => undefined);
    for (const amount of [0, 5]) {
      const release = (await r.reserve('a', amount))!;
      release(10, never);
      release(10, never);
    }
    expect(r.held('a')).toBe(20);
  });
});
