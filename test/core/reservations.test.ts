import { describe, expect, it } from 'vitest';
import { Reservations } from '../../src/billing/reservations.js';

/** In-flight reservations against a balance read from the store, with charges written at once or acknowledged before their write. */
describe('in-flight reservations', () => {
  it('counts what is in flight against the balance, and releases exactly once', async () => {
    let balance = 100;
    let now = 0;
    const r = new Reservations({ getAccount: async (id) => ({ id, name: id, balance, upstreams: null, limits: {}, createdAt: 0 }) }, () => now);
    const first = await r.reserve('acct', 60);
    expect(first).toBeDefined();
    expect(await r.reserve('acct', 60)).toBeUndefined(); // 120 > 100 while the first is in flight
    const parallel = await Promise.all([r.reserve('acct', 20), r.reserve('acct', 20), r.reserve('acct', 20)]);
    expect(parallel.filter(Boolean)).toHaveLength(2); // 60 + 20 + 20 = 100
    // Charged 50 and awaited (no durable promise): the charge is in the store when the release is called.
    balance = 50;
    first!(50); // this process now sees 50 left
    first!(50);
    expect(r.held('acct')).toBe(40);
    for (const p of parallel) p?.(0);
    expect(await r.reserve('acct', 51)).toBeUndefined();
    expect(await r.reserve('acct', 50)).toBeDefined();
    // A top-up (or another instance's charge) shows once the view is a second old.
    balance = 1_000;
    now += 1_000;
    expect(await r.reserve('acct', 900)).toBeDefined();
  });
});

describe('reservations with acknowledged charges', () => {
  it('an acknowledged charge counts against the balance until it is written, and is not counted twice after', async () => {
    let balance = 100;
    let now = 0;
    const r = new Reservations({ getAccount: async (id) => ({ id, name: id, balance, upstreams: null, limits: {}, createdAt: 0 }) }, () => now);
    const release = (await r.reserve('acct', 10))!;
    let write!: () => void;
    const durable = new Promise<void>((res) => (write = res));
    release(70, durable); // charged 70, not yet in the store: the store still says 100
    expect(r.held('acct')).toBe(70);
    expect(await r.reserve('acct', 31)).toBeUndefined();
    // The write lands; the store now says 30 and the cached view (read before) drops by 70.
    balance = 30;
    write();
    await durable;
    await new Promise((res) => setImmediate(res));
    expect(r.held('acct')).toBe(0);
    expect(await r.reserve('acct', 31)).toBeUndefined();
    const ok = await r.reserve('acct', 30);
    expect(ok).toBeDefined();
    ok!(0);
    // A view read after the write already holds it: 30 left, not -40.
    now += 1_000;
    expect(await r.reserve('acct', 30)).toBeDefined();
  });

  it('refreshes the balance in the background past half its lifetime, and waits only when it expired', async () => {
    let balance = 100;
    let reads = 0;
    let now = 0;
    const r = new Reservations(
      {
        getAccount: async (id) => {
          reads++;
          return { id, name: id, balance, upstreams: null, limits: {}, createdAt: 0 };
        },
      },
      () => now,
    );
    (await r.reserve('acct', 1))!(0);
    expect(reads).toBe(1);
    now = 400;
    (await r.reserve('acct', 1))!(0);
    expect(reads).toBe(1); // fresh
    balance = 5;
    now = 600;
    // Past half: answered from the cached 100 while a read starts.
    const stale = await r.reserve('acct', 50);
    expect(stale).toBeDefined();
    stale!(0);
    expect(reads).toBe(2);
    await new Promise((res) => setImmediate(res));
    expect(await r.reserve('acct', 50)).toBeUndefined(); // the background read brought 5
  });
});

describe('a request beside video holds being taken', () => {
  const account = (balance: () => number) => ({ getAccount: async (id: string) => ({ id, name: id, balance: balance(), upstreams: null, limits: {}, createdAt: 0 }) });

  it('waits for a hold the store is about to refuse, instead of being refused for it', async () => {
    const r = new Reservations(account(() => 200), () => 0);
    (await r.reserve('acct', 1))!(0); // the balance is read (and cached) before the hold begins
    let answer!: (v: string) => void;
    // A 400 hold on a balance of 200: the store will refuse it, but it counts while being taken.
    const hold = r.storeHold('acct', 400, () => new Promise<string>((res) => (answer = res)), (a) => (a === 'ok' ? 'taken' : 'refused'));
    const small = r.reserve('acct', 1);
    await new Promise((res) => setImmediate(res));
    answer('insufficient');
    expect(await hold).toBe('insufficient');
    expect(await small).toBeDefined();
  });

  it('is still refused when the hold is taken and the rest does not cover it', async () => {
    let balance = 500;
    const r = new Reservations(account(() => balance), () => 0);
    (await r.reserve('acct', 1))!(0);
    let answer!: (v: string) => void;
    const hold = r.storeHold('acct', 400, () => new Promise<string>((res) => (answer = res)), (a) => (a === 'ok' ? 'taken' : 'refused'));
    const big = r.reserve('acct', 200);
    await new Promise((res) => setImmediate(res));
    balance = 100;
    answer('ok');
    expect(await hold).toBe('ok');
    expect(await big).toBeUndefined();
    expect(await r.reserve('acct', 100)).toBeDefined();
  });
});
