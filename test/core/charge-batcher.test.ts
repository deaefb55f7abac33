import { describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../../src/core/errors.js';
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

describe('charges acknowledged before their write', () => {
  const gate = () => {
    let open!: () => void;
    const p = new Promise<void>((r) => (open = r));
    return { p, open };
  };

  it('submit returns before the write; durable settles once written; one write at a time carries what queued meanwhile', async () => {
    const calls: string[][] = [];
    const first = gate();
    const b = new ChargeBatcher({
      chargeMany: async (items) => {
        calls.push(items.map((i) => i.ref));
        if (calls.length === 1) await first.p;
        return items.map(() => 'ok' as const);
      },
    });
    const a = await b.submit('acct', 5, 'r1', null, 0);
    expect(b.backlog).toBe(1);
    let landed = false;
    void a.durable.then(() => (landed = true));
    await new Promise((r) => setImmediate(r)); // r1 is being written
    const more = await Promise.all(['r2', 'r3', 'r4'].map((ref) => b.submit('acct', 5, ref, null, 0)));
    await new Promise((r) => setTimeout(r, 10));
    expect(calls).toEqual([['r1']]); // r2..r4 wait for r1's write instead of starting their own
    expect(landed).toBe(false);
    first.open();
    await Promise.all([a.durable, ...more.map((m) => m.durable)]);
    expect(landed).toBe(true);
    expect(calls).toEqual([['r1'], ['r2', 'r3', 'r4']]);
    expect(b.backlog).toBe(0);
  });

  it('a failed write is retried, reported, and drained before shutdown', async () => {
    let failures = 2;
    const written: string[] = [];
    const errors: string[] = [];
    const b = new ChargeBatcher(
      {
        chargeMany: async (items) => {
          if (failures-- > 0) throw new Error('connection refused');
          written.push(...items.map((i) => i.ref));
          return items.map(() => 'ok' as const);
        },
      },
      { onError: (e, ref) => errors.push(`${ref}: ${(e as Error).message}`) },
    );
    const { durable } = await b.submit('acct', 5, 'r1', null, 0);
    await b.drain(5_000);
    await durable;
    expect(written).toEqual(['r1']);
    expect(errors).toEqual(['r1: connection refused', 'r1: connection refused']);
  });

  it('past maxUnwritten a submit waits for its own write and reports its failure', async () => {
    const first = gate();
    let fail = false;
    const b = new ChargeBatcher(
      {
        chargeMany: async (items) => {
          await first.p;
          if (fail) throw new Error('database gone');
          return items.map(() => 'ok' as const);
        },
      },
      { maxUnwritten: 2 },
    );
    await b.submit('acct', 1, 'r1', null, 0);
    await b.submit('acct', 1, 'r2', null, 0);
    expect(b.backlog).toBe(2);
    let third: 'pending' | 'done' | 'failed' = 'pending';
    const p = b.submit('acct', 1, 'r3', null, 0).then(
      () => (third = 'done'),
      () => (third = 'failed'),
    );
    await new Promise((r) => setTimeout(r, 10));
    expect(third).toBe('pending'); // waits: the backlog is full
    fail = true;
    first.open();
    await p;
    expect(third).toBe('failed');
  });

  it('drain gives up at its deadline and reports what it could not write', async () => {
    const errors: string[] = [];
    const b = new ChargeBatcher({ chargeMany: async () => { throw new Error('down'); } }, { onError: (_e, ref) => errors.push(ref) });
    const { durable } = await b.submit('acct', 1, 'r1', null, 0);
    const t0 = Date.now();
    await b.drain(150);
    await durable;
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(errors.at(-1)).toBe('r1');
    expect(b.backlog).toBe(0);
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

describe('charge batching with a gather window (SQLite)', () => {
  function recording(gatherMs = 30) {
    const calls: string[][] = [];
    const b = new ChargeBatcher(
      {
        chargeMany: async (items) => {
          calls.push(items.map((i) => i.ref));
          return items.map(() => 'ok' as const);
        },
      },
      { gatherMs },
    );
    return { b, calls };
  }

  it('writes acknowledged charges of several turns in one write at the end of the window', async () => {
    const { b, calls } = recording();
    const { durable: d1 } = await b.submit('a', 1, 'r1', null, 0);
    await new Promise((r) => setImmediate(r));
    const { durable: d2 } = await b.submit('a', 1, 'r2', null, 0);
    await new Promise((r) => setImmediate(r));
    expect(calls).toEqual([]);
    expect(b.backlog).toBe(2);
    await Promise.all([d1, d2]);
    expect(calls).toEqual([['r1', 'r2']]);
    expect(b.backlog).toBe(0);
  });

  it('a caller waiting for its charge does not wait for the window, and takes the gathered ones along', async () => {
    // A window longer than the test's timeout: waiting for it would fail the test.
    const { b, calls } = recording(60_000);
    await b.submit('a', 1, 'r1', null, 0);
    await expect(b.charge('a', 1, 'r2', null, 0)).resolves.toBe('ok');
    expect(calls).toEqual([['r1', 'r2']]);
  });

  it('drain writes the gathered charges at once', async () => {
    const { b, calls } = recording(60_000);
    await b.submit('a', 1, 'r1', null, 0);
    await b.drain();
    expect(calls).toEqual([['r1']]);
    expect(b.backlog).toBe(0);
  });
});

describe('charge writes at a pace (PostgreSQL)', () => {
  it('under steady acknowledged charges starts a write at most once per pace, each with everything queued until then', async () => {
    const starts: number[] = [];
    const calls: string[][] = [];
    let inWrite: (() => void) | undefined;
    const b = new ChargeBatcher(
      {
        chargeMany: async (items) => {
          starts.push(Date.now());
          calls.push(items.map((i) => i.ref));
          // A write that takes a while, as a database round trip does; the test submits during it.
          await new Promise<void>((r) => (inWrite = r));
          return items.map(() => 'ok' as const);
        },
      },
      { paceMs: 60 },
    );
    const { durable: d1 } = await b.submit('a', 1, 'r1', null, 0);
    await new Promise((r) => setImmediate(r));
    expect(calls).toHaveLength(1);
    const { durable: d2 } = await b.submit('a', 1, 'r2', null, 0);
    inWrite!();
    await d1;
    const { durable: d3 } = await b.submit('a', 1, 'r3', null, 0);
    // The previous write has ended; the next waits for the rest of the pace since that one started.
    await new Promise((r) => setTimeout(r, 20));
    expect(calls).toHaveLength(1);
    await vi.waitFor(() => expect(calls).toHaveLength(2), { timeout: 1_000, interval: 5 });
    inWrite!();
    await Promise.all([d2, d3]);
    expect(calls).toEqual([['r1'], ['r2', 'r3']]);
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(55);
  });

  it('a caller waiting for its charge goes right after the write in flight, with what queued meanwhile', async () => {
    const calls: string[][] = [];
    let inWrite: (() => void) | undefined;
    const b = new ChargeBatcher(
      {
        chargeMany: async (items) => {
          calls.push(items.map((i) => i.ref));
          if (calls.length === 1) await new Promise<void>((r) => (inWrite = r));
          return items.map(() => 'ok' as const);
        },
      },
      // Longer than the test's timeout: waiting for the pace would fail the test.
      { paceMs: 60_000 },
    );
    const first = b.charge('a', 1, 'r1', null, 0);
    await new Promise((r) => setImmediate(r));
    expect(calls).toHaveLength(1);
    await b.submit('a', 1, 'r2', null, 0);
    const waited = b.charge('a', 1, 'r3', null, 0);
    inWrite!();
    await expect(Promise.all([first, waited])).resolves.toEqual(['ok', 'ok']);
    expect(calls).toEqual([['r1'], ['r2', 'r3']]);
  });

  it('keeps its pace when the wall clock is set back', async () => {
    const calls: string[][] = [];
    const b = new ChargeBatcher(
      {
        chargeMany: async (items) => {
          calls.push(items.map((i) => i.ref));
          return items.map(() => 'ok' as const);
        },
      },
      { paceMs: 50 },
    );
    const { durable: d1 } = await b.submit('a', 1, 'r1', null, 0);
    await d1;
    // An operator or NTP steps the clock back an hour: the next write must not wait for the old time to come back.
    vi.setSystemTime(Date.now() - 3_600_000);
    try {
      const { durable: d2 } = await b.submit('a', 1, 'r2', null, 0);
      await vi.waitFor(() => expect(calls).toEqual([['r1'], ['r2']]), { timeout: 1_000, interval: 5 });
      await d2;
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('charge writes that fail', () => {
  const transient = () => new Error('connection refused');

  it('retries an acknowledged charge whose own write failed for the database, drops one the store refused, and rejects a waiting caller', async () => {
    let down = true;
    const written: string[] = [];
    const reported: string[] = [];
    const b = new ChargeBatcher(
      {
        // As the store does after a failed batch: each item on its own, errors in their slots.
        chargeMany: async (items) =>
          items.map((it) => {
            if (it.ref === 'gone') return new GatewayError(404, 'invalid_request_error', 'Account does not exist.');
            if (down) return transient();
            written.push(it.ref);
            return 'ok' as const;
          }),
      },
      { onError: (e, ref) => reported.push(`${ref}: ${(e as Error).message}`) },
    );
    const a = await b.submit('acct', 5, 'a1', null, 0);
    const gone = await b.submit('acct', 5, 'gone', null, 0);
    const waiting = b.charge('acct', 5, 'w1', null, 0);
    await expect(waiting).rejects.toThrow('connection refused');
    await gone.durable;
    expect(b.backlog).toBe(1);
    down = false;
    await a.durable;
    expect(written).toEqual(['a1']);
    expect(b.backlog).toBe(0);
    expect(reported).toContain('gone: Account does not exist.');
    expect(reported).toContain('a1: connection refused');
  });

  it('refuses an amount the ledger cannot take before it is queued, so the charges after it are still written', async () => {
    const written: string[] = [];
    const b = new ChargeBatcher({
      chargeMany: async (items) => {
        if (items.some((i) => !Number.isSafeInteger(i.amount) || i.amount < 0)) throw new Error('amount must be an integer');
        written.push(...items.map((i) => i.ref));
        return items.map(() => 'ok' as const);
      },
    });
    for (const bad of [1e16, Number.NaN, -1, 0.5, Number.POSITIVE_INFINITY]) {
      await expect(b.submit('acct', bad, 'bad', null, 0)).rejects.toMatchObject({ status: 500 });
      await expect(b.charge('acct', bad, 'bad', null, 0)).rejects.toMatchObject({ status: 500 });
    }
    const { durable } = await b.submit('acct', 5, 'good', null, 0);
    await expect(b.charge('acct', 5, 'chat', null, 0)).resolves.toBe('ok');
    await durable;
    expect(written.sort()).toEqual(['chat', 'good']);
    expect(b.backlog).toBe(0);
  });

  it('drain keeps the retry delays while the database stays down, then reports what it could not write', async () => {
    let writes = 0;
    const reported: string[] = [];
    const b = new ChargeBatcher(
      {
        chargeMany: async () => {
          writes++;
          throw transient();
        },
      },
      { onError: (_e, ref) => reported.push(ref) },
    );
    const { durable } = await b.submit('acct', 1, 'r1', null, 0);
    await new Promise((r) => setTimeout(r, 30));
    const before = writes;
    await b.drain(1_200);
    await durable;
    // Retries at 50, 200 and 1,000 ms: a handful of writes, not one per event-loop turn.
    expect(writes - before).toBeGreaterThanOrEqual(1);
    expect(writes - before).toBeLessThanOrEqual(4);
    expect(reported.at(-1)).toBe('r1');
    expect(b.backlog).toBe(0);
  });

  it('at its deadline drain also reports the charges of a write still in flight', async () => {
    const reported: string[] = [];
    const b = new ChargeBatcher({ chargeMany: () => new Promise(() => undefined) }, { onError: (e, ref) => reported.push(`${ref}: ${(e as Error).message}`) });
    await b.submit('acct', 1, 'r1', null, 0);
    await b.submit('acct', 1, 'r2', null, 0);
    await b.drain(100);
    expect(reported).toEqual(['r1: 2 charge(s) still being written at shutdown']);
  });
});
