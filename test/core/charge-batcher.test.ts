import { describe, expect, it } from 'vitest';
import { ChargeBatcher } from '../../src/billing/charges.js';
import { Reservations } from '../../src/billing/reservations.js';

describe('charge batching', () => {
  it('writes charges queued in one turn in one call, and settles each caller with its own result', async () => {
    const calls: number[] = [];
    const b = new ChargeBatcher({
      chargeMany: async (items) => {
        calls.push(items.length);
        return items.map((it) => (it.ref === 'dup' ? 'duplicate' : it.ref === 'bad' ? new Error('gone') : 'ok'));
      },
    });
    const results = await Promise.allSettled([
      b.charge('a', 1, 'r1', null, 0),
      b.charge('a', 1, 'dup', null, 0),
      b.charge('a', 1, 'bad', null, 0),
      b.charge('b', 1, 'r2', null, 0),
    ]);
    expect(calls).toEqual([4]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : 'rejected'))).toEqual(['ok', 'duplicate', 'rejected', 'ok']);
    await b.charge('a', 1, 'r3', null, 0);
    expect(calls).toEqual([4, 1]);
  });
});

describe('charge batching at shutdown', () => {
  it('drain resolves only after every queued and in-flight charge is written', async () => {
    const written: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const b = new ChargeBatcher({
      chargeMany: async (items) => {
        await gate;
        written.push(...items.map((i) => i.ref));
        return items.map(() => 'ok' as const);
      },
    });
    const first = b.charge('a', 1, 'r1', null, 0);
    await new Promise((r) => setImmediate(r)); // r1 is now being written
    const second = b.charge('a', 1, 'r2', null, 0); // r2 is only queued
    let drained = false;
    const draining = b.drain().then(() => (drained = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(drained).toBe(false);
    release();
    await draining;
    expect(written.sort()).toEqual(['r1', 'r2']);
    await expect(Promise.all([first, second])).resolves.toEqual(['ok', 'ok']);
  });

  it('drain of an idle batcher resolves at once, and a failed write does not hang it', async () => {
    const b = new ChargeBatcher({ chargeMany: async () => { throw new Error('database gone'); } });
    await b.drain();
    const p = b.charge('a', 1, 'r1', null, 0);
    await b.drain();
    await expect(p).rejects.toThrow('database gone');
  });
});

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
    first!(50); // charged 50: this process now sees 50 left
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
