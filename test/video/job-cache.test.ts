import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../../src/store/job-types.js';
import { JobCache } from '../../src/video/job-cache.js';

/** A store whose reads wait until released, counting them; each read returns a new row object. */
function slowStore(state: { job: Partial<JobRecord> | undefined }) {
  const waiting: (() => void)[] = [];
  let reads = 0;
  const store = {
    getJob: async (id: string): Promise<JobRecord | undefined> => {
      reads++;
      // The row as it was when the read began.
      const row = state.job ? ({ id, state: 'processing', nextPollAt: Number.MAX_SAFE_INTEGER, ...state.job } as JobRecord) : undefined;
      await new Promise<void>((r) => waiting.push(r));
      return row;
    },
  };
  /** Lets every waiting read finish (`newestFirst`: in the reverse of the order they began). */
  const release = async (newestFirst = false) => {
    const all = waiting.splice(0);
    for (const r of newestFirst ? all.reverse() : all) r();
    await new Promise((r) => setImmediate(r));
  };
  return { store, release, reads: () => reads };
}

describe('job cache', () => {
  it('polls that miss together share one read', async () => {
    const clock = { now: () => 0 };
    const s = slowStore({ job: { progress: 1 } });
    const cache = new JobCache(s.store, clock, () => clock.now());
    const polls = Array.from({ length: 10 }, () => cache.get('j'));
    await s.release();
    const rows = await Promise.all(polls);
    expect(s.reads()).toBe(1);
    expect(new Set(rows).size).toBe(1);
    expect(await cache.get('j')).toBe(rows[0]);
  });

  it('does not keep a row whose read began before the job was forgotten', async () => {
    const clock = { now: () => 0 };
    const state: { job: Partial<JobRecord> | undefined } = { job: { progress: 1 } };
    const s = slowStore(state);
    const cache = new JobCache(s.store, clock, () => clock.now());
    const early = cache.get('j');
    // This instance changes the job meanwhile.
    cache.forget('j');
    state.job = { state: 'completed' };
    const late = cache.get('j');
    // The earlier read ends last: its row must not replace the later one.
    await s.release(true);
    expect((await early)?.state).toBe('processing');
    expect((await late)?.state).toBe('completed');
    expect((await cache.get('j'))?.state).toBe('completed');
    expect(s.reads()).toBe(2);
  });

  it('reads a row again in the background near the end of its second, and never serves it past that second', async () => {
    let t = 0;
    const clock = { now: () => t };
    const state: { job: Partial<JobRecord> | undefined } = { job: { progress: 1 } };
    const s = slowStore(state);
    const cache = new JobCache(s.store, clock, () => clock.now());
    // Read twice within the second: a hot job, whose row is kept from the second read on.
    for (let i = 0; i < 2; i++) {
      const p = cache.get('j');
      await s.release();
      await p;
    }
    const row = await cache.get('j');
    expect(s.reads()).toBe(2);
    state.job = { progress: 2 };
    t = 800;
    // Answered at once with the row it has; one read starts.
    expect(await cache.get('j')).toBe(row);
    expect(await cache.get('j')).toBe(row);
    expect(s.reads()).toBe(3);
    await s.release();
    expect((await cache.get('j'))?.progress).toBe(2);
    // Unpolled for over a second: the next poll waits for a read.
    state.job = { progress: 3 };
    t = 2_000;
    const waited = cache.get('j');
    await s.release();
    expect((await waited)?.progress).toBe(3);
  });

  it('keeps no processing row past its next poll time, and no missing job', async () => {
    const clock = { now: () => 100 };
    const state: { job: Partial<JobRecord> | undefined } = { job: { nextPollAt: 50 } };
    const s = slowStore(state);
    const cache = new JobCache(s.store, clock, () => clock.now());
    for (let i = 0; i < 2; i++) {
      const p = cache.get('j');
      await s.release();
      await p;
    }
    state.job = undefined;
    for (let i = 0; i < 2; i++) {
      const p = cache.get('j');
      await s.release();
      expect(await p).toBeUndefined();
    }
    expect(s.reads()).toBe(4);
  });

  it('a failing read fails only the polls that waited on it, a failing background re-read none, and the next poll reads again', async () => {
    let now = 0;
    let fail = true;
    let reads = 0;
    const store = {
      getJob: async (id: string): Promise<JobRecord | undefined> => {
        reads++;
        if (fail) throw new Error('database unavailable');
        return { id, state: 'processing', nextPollAt: Number.MAX_SAFE_INTEGER } as JobRecord;
      },
    };
    const cache = new JobCache(store, { now: () => now }, () => now);
    const polls = [cache.get('j'), cache.get('j')];
    for (const p of polls) await expect(p).rejects.toThrow('database unavailable');
    expect(reads).toBe(1);

    fail = false;
    const row = await cache.get('j');
    expect(reads).toBe(2);
    // Past the re-read point the row is still served while a background read fails: no rejection escapes.
    fail = true;
    now = 800;
    expect(await cache.get('j')).toBe(row);
    await new Promise((r) => setImmediate(r));
    expect(reads).toBe(3);
    // The failed background read left nothing in flight: the next poll past the point starts another.
    expect(await cache.get('j')).toBe(row);
    expect(reads).toBe(4);
  });

  it('keeps no row of a job read once, and keeps it once the job is read again within the second', async () => {
    let t = 0;
    const clock = { now: () => t };
    const s = slowStore({ job: { progress: 1 } });
    const cache = new JobCache(s.store, clock, () => clock.now());
    const poll = async (id: string) => {
      const p = cache.get(id);
      await s.release();
      return p;
    };
    // Many jobs, each polled once (most jobs: clients poll every few seconds): every poll reads.
    for (const id of ['a', 'b', 'c']) await poll(id);
    expect(s.reads()).toBe(3);
    // Polled again after more than a second: still not hot.
    t = 1_500;
    await poll('a');
    expect(s.reads()).toBe(4);
    // Again within the second: hot, the row is kept and the next poll is answered from it.
    t = 1_600;
    const row = await poll('a');
    expect(s.reads()).toBe(5);
    expect(await cache.get('a')).toBe(row);
    expect(s.reads()).toBe(5);
  });

  it('serves a kept row for at most its second of elapsed time, whatever the wall clock does', async () => {
    let wall = 1_000_000;
    let elapsed = 0;
    const state: { job: Partial<JobRecord> | undefined } = { job: { progress: 1, nextPollAt: Number.MAX_SAFE_INTEGER } };
    const s = slowStore(state);
    const cache = new JobCache(s.store, { now: () => wall }, () => elapsed);
    const poll = async () => {
      const p = cache.get('j');
      await s.release();
      return p;
    };
    await poll();
    elapsed = 100;
    const kept = await poll(); // read again within the second: kept
    expect(await cache.get('j')).toBe(kept);
    const reads = s.reads();
    // Another instance deletes the job; this host's wall clock is then stepped back a minute.
    state.job = { progress: 1, nextPollAt: Number.MAX_SAFE_INTEGER, deletedAt: 5 };
    wall -= 60_000;
    elapsed = 1_200;
    const after = await poll();
    expect(s.reads()).toBe(reads + 1);
    expect(after?.deletedAt).toBe(5);
  });
});
