import { describe, expect, it } from 'vitest';
import { SharedFlights } from '../../src/core/shared-flights.js';

/** Work in flight joined by later callers (src/core/shared-flights.ts). */
function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('SharedFlights', () => {
  it('callers of one key share the running work; other keys get their own', async () => {
    const f = new SharedFlights<string, number>(1_000);
    let started = 0;
    const d = deferred<number>();
    const start = () => (started++, d.promise);
    const a = f.join('k', 0, start);
    const b = f.join('k', 500, start);
    const other = f.join('other', 500, () => Promise.resolve(7));
    expect(started).toBe(1);
    d.resolve(42);
    await expect(Promise.all([a, b, other])).resolves.toEqual([42, 42, 7]);
  });

  it('work older than maxAgeMs is not joined: the caller starts its own', () => {
    const f = new SharedFlights<string, number>(1_000);
    const old = f.join('k', 0, () => new Promise(() => undefined));
    const fresh = f.join('k', 1_000, () => Promise.resolve(1));
    expect(fresh).not.toBe(old);
    expect(f.join('k', 1_500, () => Promise.resolve(2))).toBe(fresh);
  });

  it('settled work leaves: a failure reaches those who joined it, never a later caller', async () => {
    const f = new SharedFlights<string, number>(1_000);
    const d = deferred<number>();
    const a = f.join('k', 0, () => d.promise);
    const b = f.join('k', 1, () => Promise.resolve(0));
    d.reject(new Error('store down'));
    await expect(a).rejects.toThrow('store down');
    await expect(b).rejects.toThrow('store down');
    await expect(f.join('k', 2, () => Promise.resolve(5))).resolves.toBe(5);
  });

  it('clear drops what is in flight, so a caller after an invalidation starts anew', async () => {
    const f = new SharedFlights<string, string>(1_000);
    const before = f.join('k', 0, () => new Promise(() => undefined));
    f.clear();
    const after = f.join('k', 1, () => Promise.resolve('fresh'));
    expect(after).not.toBe(before);
    await expect(after).resolves.toBe('fresh');
  });
});
