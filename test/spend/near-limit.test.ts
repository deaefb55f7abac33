import { afterAll, describe, expect, it } from 'vitest';
import { ChargeBatcher } from '../../src/billing/charges.js';
import { Reservations, type HoldOutcome } from '../../src/billing/reservations.js';
import type { Store } from '../../src/store/types.js';
import { balanceOf, makeAccount, newJob, postgresBackend, sqliteBackend, T0, uid, type Backend } from '../store/harness.js';

/**
 * Decisions near the balance limit while this process's own writes land: a charge acknowledged
 * before its write, or a video hold, can be in the store before the process hears of it. A figure
 * read then (or a store check handed the in-flight sum) holds it and must not count it a second
 * time, or a request the balance covers is refused; and nothing may ever be admitted on money the
 * store does not have. Real stores, on SQLite and PostgreSQL.
 */
const backends: Backend[] = [sqliteBackend(), postgresBackend()];
afterAll(async () => {
  for (const b of backends) await b.dispose();
});

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { opened, open };
}

/** A batcher whose writes commit, then wait for `ack` before the process hears of them. */
function slowAckBatcher(store: Store, ack: Promise<void>) {
  const committed = gate();
  const batcher = new ChargeBatcher({
    chargeMany: async (items) => {
      const r = await store.chargeMany(items);
      committed.open();
      await ack;
      return r;
    },
  });
  return { batcher, committed: committed.opened };
}

/**
 * The store's balance reads, and `after(f)`: f runs once the next read has answered and the
 * request that read it has decided (on the next turn of the event loop), so an acknowledgement
 * arrives while a refusal waits for it, with no timer guessing when that is.
 */
function afterRead(store: Store) {
  let next: (() => void) | undefined;
  const reads = {
    getAccount: async (id: string) => {
      const account = await store.getAccount(id);
      const f = next;
      next = undefined;
      if (f) setImmediate(f);
      return account;
    },
  };
  return { reads, after: (f: () => void) => (next = f) };
}

const outcome = (r: 'ok' | 'insufficient' | 'key_budget' | 'key_lost'): HoldOutcome => (r === 'ok' ? 'taken' : r === 'insufficient' ? 'short' : 'refused');

for (const backend of backends) {
  describe(`near the balance limit (${backend.name})`, () => {
    it('a video hold the balance covers is taken while a charge that already landed is still being acknowledged', async () => {
      const { store } = await backend.fresh();
      const a = await makeAccount(store, 100);
      const ack = gate();
      const { batcher, committed } = slowAckBatcher(store, ack.opened);
      const r = new Reservations(store, () => 0);
      const release = (await r.reserve(a.id, 10))!;
      const { durable } = await batcher.submit(a.id, 10, uid('emb'), null, T0);
      release(10, durable);
      await committed; // 90 left in the store; this process still counts the 10 as on its way
      const job = newJob(a.id);
      const take = async (inFlight: number) => {
        const answer = await store.createJobWithHold(job, 90, T0, inFlight);
        // Refused on the charge counted twice: its acknowledgement comes while the hold waits for it.
        if (answer === 'insufficient') setImmediate(ack.open);
        return answer;
      };
      const placed = await r.storeHold(a.id, 90, take, outcome);
      expect(placed).toBe('ok');
      expect(await balanceOf(store, a.id)).toBe(0);
      // Nothing is left: one micro more is refused, by the store and by this process.
      expect(await r.storeHold(a.id, 1, (inFlight) => store.createJobWithHold(newJob(a.id), 1, T0, inFlight), outcome)).toBe('insufficient');
      expect(await r.reserve(a.id, 1)).toBeUndefined();
    });

    it('a figure read after a charge landed, before it was acknowledged, does not count it twice', async () => {
      const { store } = await backend.fresh();
      const a = await makeAccount(store, 100);
      let now = 0;
      const { reads, after } = afterRead(store);
      const r = new Reservations(reads, () => now);
      (await r.reserve(a.id, 1))!(0);
      const ack = gate();
      const { batcher, committed } = slowAckBatcher(store, ack.opened);
      const release = (await r.reserve(a.id, 10))!;
      const { durable } = await batcher.submit(a.id, 10, uid('emb'), null, T0);
      release(10, durable);
      await committed;
      now += 1_000; // the next request reads the store: 90, which holds the charge
      after(ack.open);
      const all = await r.reserve(a.id, 90);
      expect(all).toBeDefined();
      expect(await r.reserve(a.id, 1)).toBeUndefined();
      all!(0);
      // Landed: the figure (read after the write) is still 90, not 80.
      await durable;
      expect(await r.reserve(a.id, 91)).toBeUndefined();
      expect(await r.reserve(a.id, 90)).toBeDefined();
    });

    it('a video hold that lands while the balance is read is counted once', async () => {
      const { store } = await backend.fresh();
      const a = await makeAccount(store, 100);
      let now = 0;
      const { reads, after } = afterRead(store);
      const r = new Reservations(reads, () => now);
      (await r.reserve(a.id, 1))!(0);
      const taken = gate();
      const ack = gate();
      const job = newJob(a.id);
      const hold = r.storeHold(
        a.id,
        60,
        async (inFlight) => {
          const placed = await store.createJobWithHold(job, 60, T0, inFlight);
          taken.open();
          await ack.opened;
          return placed;
        },
        outcome,
      );
      await taken.opened; // 40 left in the store; the process has not heard yet
      now += 1_000;
      after(ack.open);
      const rest = await r.reserve(a.id, 40);
      expect(rest).toBeDefined();
      expect(await hold).toBe('ok');
      expect(await r.reserve(a.id, 1)).toBeUndefined();
      rest!(0);
      // The hold has landed and the cached figure is still the store's 40.
      expect(await r.reserve(a.id, 40)).toBeDefined();
      expect(await balanceOf(store, a.id)).toBe(40);
    });

    it('money a video gives back counts once, even for a figure read while the release was written', async () => {
      const { store } = await backend.fresh();
      const a = await makeAccount(store, 100);
      let now = 0;
      let readGate: Promise<void> | undefined;
      // Reads wait at `readGate` before they reach the store (a busy pool): issued early, answered late.
      const slowReads = { getAccount: async (id: string) => (readGate && (await readGate), store.getAccount(id)) };
      const r = new Reservations(slowReads, () => now);
      const job = newJob(a.id);
      expect(await r.storeHold(a.id, 100, (inFlight) => store.createJobWithHold(job, 100, T0, inFlight), outcome)).toBe('ok');
      expect(await r.reserve(a.id, 1)).toBeUndefined();
      now = 1_000;
      const g = gate();
      readGate = g.opened;
      const early = r.reserve(a.id, 50); // its read is issued now, before the release
      now = 1_001;
      const credit = r.releasing(a.id);
      expect(await store.rejectJob(job.id, 'refused', T0)).toBe(true);
      readGate = undefined;
      g.open();
      const first = await early; // the read ran after the release was written: it holds the 100
      credit(100);
      expect(first).toBeDefined();
      // The 100 came back once: 50 is left, not 150.
      expect(await r.reserve(a.id, 51)).toBeUndefined();
      expect(await r.reserve(a.id, 50)).toBeDefined();
    });

    it('requests side by side that together need exactly the balance are all admitted, and one micro more is not', async () => {
      const { store } = await backend.fresh();
      const a = await makeAccount(store, 100);
      let now = 0;
      const { reads, after } = afterRead(store);
      const r = new Reservations(reads, () => now);
      const ack = gate();
      const { batcher, committed } = slowAckBatcher(store, ack.opened);
      // Five requests charged 10 each: written to the store, not yet acknowledged.
      const durables: Promise<void>[] = [];
      for (let i = 0; i < 5; i++) {
        const release = (await r.reserve(a.id, 10))!;
        const { durable } = await batcher.submit(a.id, 10, uid('emb'), null, T0);
        release(10, durable);
        durables.push(durable);
      }
      await committed;
      now += 1_000;
      after(ack.open);
      // Three more requests and two video holds of 10 at once: 50 left, exactly what they need.
      const releases = await Promise.all([r.reserve(a.id, 10), r.reserve(a.id, 10), r.reserve(a.id, 10)]);
      const holds = await Promise.all(
        [newJob(a.id), newJob(a.id)].map((job) => r.storeHold(a.id, 10, (inFlight) => store.createJobWithHold(job, 10, T0, inFlight), outcome)),
      );
      expect(releases.every((x) => x !== undefined)).toBe(true);
      expect(holds).toEqual(['ok', 'ok']);
      expect(await r.reserve(a.id, 1)).toBeUndefined();
      await Promise.all(durables);
      for (const release of releases) {
        await store.charge(a.id, 10, uid('chat'), null, T0);
        release!(10);
      }
      expect(await balanceOf(store, a.id)).toBe(0);
      expect(await r.reserve(a.id, 1)).toBeUndefined();
    });
  });
}
