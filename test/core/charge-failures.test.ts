import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/core/errors.js';
import { ChargeBatcher } from '../../src/billing/charges.js';

/** A charge batcher whose writes fail: retried, reported, refused before queueing, and drained at shutdown. */
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
