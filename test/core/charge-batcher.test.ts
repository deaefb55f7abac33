import { describe, expect, it, vi } from 'vitest';
import { ChargeBatcher } from '../../src/billing/charges.js';

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

describe('charge batching with a gather window (SQLite)', () => {
  function recording(gatherMs: number) {
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
    // Long enough that a machine holding this process for a moment does not end the window before
    // the test looks (both charges are submitted within two turns).
    const { b, calls } = recording(500);
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
      // Far longer than the test takes to submit and look, even on a busy machine.
      { paceMs: 500 },
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
    await vi.waitFor(() => expect(calls).toHaveLength(2), { timeout: 5_000, interval: 5 });
    inWrite!();
    await Promise.all([d2, d3]);
    expect(calls).toEqual([['r1'], ['r2', 'r3']]);
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(490);
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
      // Within the pace (50 ms), not the hour; 5 s for a busy machine.
      await vi.waitFor(() => expect(calls).toEqual([['r1'], ['r2']]), { timeout: 5_000, interval: 5 });
      await d2;
    } finally {
      vi.useRealTimers();
    }
  });
});
