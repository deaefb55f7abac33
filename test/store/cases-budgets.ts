import { expect, it } from 'vitest';
import type { Ctx } from './cases-accounts.js';
import { completion, makeAccount, newJob, uid } from './harness.js';
import type { BudgetPeriod, Store } from '../../src/store/types.js';

/** Midnight UTC that starts a day and a month, so one boundary serves both kinds of period. */
const MIDNIGHT = Date.UTC(2026, 0, 1);

async function keyWithBudget(store: Store, period: BudgetPeriod, periodLimit: number) {
  const a = await makeAccount(store, 100_000_000);
  const key = await store.createKey({
    id: uid('key'),
    accountId: a.id,
    hash: uid('hash'),
    prefix: 'sk-gw-AbCd',
    name: 'budgeted',
    models: ['*'],
    actions: ['video', 'embeddings'],
    limits: {},
    expiresAt: null,
    createdAt: MIDNIGHT - 86_400_000,
  });
  await store.setKeyBudget(key.id, { total: null, period, periodLimit });
  return { accountId: a.id, keyId: key.id };
}

/** A job of the key created at `createdAt`, holding `hold`, accepted by its upstream. */
async function runningJob(store: Store, accountId: string, keyId: string, hold: number, createdAt: number): Promise<string> {
  const job = newJob(accountId, { keyId, createdAt, deadlineAt: createdAt + 600_000 });
  expect(await store.createJobWithHold(job, hold, createdAt)).toBe('ok');
  await store.markJobSubmitted(job.id, { upstream: 'wan-main', taskId: `t-${job.id}`, publicId: `vid_${job.id}`, taskMeta: {}, nextPollAt: createdAt + 5_000, now: createdAt + 1 });
  return job.id;
}

export function budgetCases(ctx: () => Ctx): void {
  for (const period of ['day', 'month'] as const) {
    it(`a video created before midnight UTC and settled after it counts in its first ${period} only`, async () => {
      const { store } = ctx();
      const { accountId, keyId } = await keyWithBudget(store, period, 6_000_000);
      const jobId = await runningJob(store, accountId, keyId, 4_000_000, MIDNIGHT - 2_500);
      expect(await store.completeJob(jobId, completion(4_000_000, MIDNIGHT + 5_000))).toBe(true);
      expect((await store.keySpend(keyId, MIDNIGHT - 1)).period).toBe(4_000_000);

      // The new period's counter starts without it: read before first use, then created by an
      // embeddings request (its estimate counted, then its charge written and the estimate corrected to it).
      expect((await store.keySpend(keyId, MIDNIGHT + 10_000)).period).toBe(0);
      expect(await store.reserveKeySpend(keyId, 2_000, MIDNIGHT + 15_000)).toBe('ok');
      expect(await store.charge(accountId, 2_000, uid('emb'), null, MIDNIGHT + 15_500, { keyId })).toBe('ok');
      expect(await store.keySpend(keyId, MIDNIGHT + 16_000)).toMatchObject({ period: 2_000, periodStart: MIDNIGHT });

      // So a 4.0 video fits in the 5.998 left of 6.0, and then 1.998 more exactly.
      const next = newJob(accountId, { keyId, createdAt: MIDNIGHT + 20_000, deadlineAt: MIDNIGHT + 620_000 });
      expect(await store.createJobWithHold(next, 4_000_000, MIDNIGHT + 20_000)).toBe('ok');
      expect(await store.reserveKeySpend(keyId, 1_998_001, MIDNIGHT + 21_000)).toBe('exceeded');
      expect(await store.reserveKeySpend(keyId, 1_998_000, MIDNIGHT + 21_000)).toBe('ok');
      expect(await store.keySpend(keyId, MIDNIGHT + 22_000)).toMatchObject({ period: 6_000_000, total: 10_000_000 });
      // The first period still holds the video, and only it.
      expect((await store.keySpend(keyId, MIDNIGHT - 1)).period).toBe(4_000_000);
    });
  }

  it('a counter started from the ledger places each job in the window it was created in, settled or running', async () => {
    const { store } = ctx();
    const { accountId, keyId } = await keyWithBudget(store, 'day', 100_000_000);
    const settledLate = await runningJob(store, accountId, keyId, 3_000_000, MIDNIGHT - 1_000);
    await runningJob(store, accountId, keyId, 500_000, MIDNIGHT - 500);
    const settledToday = await runningJob(store, accountId, keyId, 700_000, MIDNIGHT + 1_000);
    expect(await store.completeJob(settledLate, completion(2_000_000, MIDNIGHT + 2_000))).toBe(true);
    expect(await store.completeJob(settledToday, completion(600_000, MIDNIGHT + 3_000))).toBe(true);
    // The budget removed and set again: its counters restart from the ledger and the jobs.
    await store.setKeyBudget(keyId, null);
    await store.setKeyBudget(keyId, { total: null, period: 'day', periodLimit: 100_000_000 });
    expect((await store.keySpend(keyId, MIDNIGHT - 1)).period).toBe(2_000_000 + 500_000);
    expect((await store.keySpend(keyId, MIDNIGHT + 4_000)).period).toBe(600_000);
    expect((await store.keySpend(keyId, MIDNIGHT + 4_000)).total).toBe(2_000_000 + 500_000 + 600_000);
  });
}
