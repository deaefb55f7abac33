import { expect, it } from 'vitest';
import type { Ctx } from './cases-accounts.js';
import { globMatch } from '../../src/routing/glob.js';
import { T0, balanceOf, completion, ledgerSum, makeAccount, newJob, processingJob } from './harness.js';

export function jobCases(ctx: () => Ctx): void {
  it('hold, submit, complete: releases the hold and captures the cost once', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 10_000_000);
    const job = newJob(a.id);
    expect(await store.createJobWithHold(job, 600_000, T0)).toBe('ok');
    expect(await balanceOf(store, a.id)).toBe(9_400_000);
    expect(await store.getJob(job.id)).toMatchObject({
      state: 'submitting', holdMicros: 600_000, upstream: null, taskId: null, publicId: null,
      request: job.request, taskMeta: {}, vendorData: {}, outputs: [], usage: null, leaseUntil: null, completedAt: null,
    });

    await store.markJobSubmitted(job.id, { upstream: 'wan-main', taskId: 't-1', publicId: 'vid_1', taskMeta: { region: 'intl' }, nextPollAt: T0 + 5_000, now: T0 + 1 });
    expect(await store.getJob(job.id)).toMatchObject({ state: 'processing', upstream: 'wan-main', taskId: 't-1', publicId: 'vid_1', taskMeta: { region: 'intl' }, nextPollAt: T0 + 5_000, updatedAt: T0 + 1 });

    const done = completion(504_000);
    expect(await store.completeJob(job.id, done)).toBe(true);
    expect(await store.getJob(job.id)).toMatchObject({
      state: 'completed', seconds: 5.04, billableSeconds: 6, costMicros: 504_000, usage: done.usage,
      outputs: done.outputs, vendorData: done.vendorData, completedAt: done.now, leaseUntil: null,
    });
    expect(await balanceOf(store, a.id)).toBe(10_000_000 - 504_000);
    const byRef = await store.listLedger(a.id, { ref: job.id });
    expect(byRef.map((e) => [e.kind, e.delta]).sort()).toEqual([['capture', -504_000], ['hold', -600_000], ['release', 600_000]]);

    expect(await store.completeJob(job.id, completion(1))).toBe(false);
    expect(await store.failJob(job.id, { code: 'late', message: 'x', vendorData: {}, now: T0 })).toBe(false);
    expect(await store.listLedger(a.id, { ref: job.id })).toHaveLength(3);
    expect(await ledgerSum(store, a.id)).toBe(await balanceOf(store, a.id));
  });

  it('a capture above the hold may take the balance below zero', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 100);
    const id = await processingJob(store, a.id, 100);
    expect(await store.completeJob(id, completion(250))).toBe(true);
    expect(await balanceOf(store, a.id)).toBe(-150);
  });

  it('hold then fail releases everything, from processing or submitting', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000);
    const processing = await processingJob(store, a.id, 300);
    const submitting = newJob(a.id);
    expect(await store.createJobWithHold(submitting, 200, T0)).toBe('ok');
    expect(await balanceOf(store, a.id)).toBe(500);

    const failure = { code: 'content_policy', message: 'blocked', vendorData: { reason: 'nsfw' }, now: T0 + 9 };
    expect(await store.failJob(processing, failure)).toBe(true);
    expect(await store.failJob(processing, failure)).toBe(false);
    expect(await store.failJob(submitting.id, failure)).toBe(true);
    expect(await store.completeJob(processing, completion(10))).toBe(false);
    expect(await store.getJob(processing)).toMatchObject({ state: 'failed', errorCode: 'content_policy', errorMessage: 'blocked', vendorData: { reason: 'nsfw' }, completedAt: T0 + 9 });
    expect(await balanceOf(store, a.id)).toBe(1_000);
    expect((await store.listLedger(a.id, { ref: processing })).map((e) => e.kind).sort()).toEqual(['hold', 'release']);
    expect(await store.failJob('no-such-job', failure)).toBe(false);
  });

  it('reject releases a submitting hold once and ignores other states', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000);
    const job = newJob(a.id);
    expect(await store.createJobWithHold(job, 400, T0)).toBe('ok');
    expect(await store.rejectJob(job.id, 'all upstreams refused', T0 + 5)).toBe(true);
    expect(await store.rejectJob(job.id, 'again', T0 + 6)).toBe(false);
    expect(await store.getJob(job.id)).toMatchObject({ state: 'rejected', errorMessage: 'all upstreams refused', completedAt: T0 + 5 });
    expect(await balanceOf(store, a.id)).toBe(1_000);
    expect(await store.listLedger(a.id, { ref: job.id })).toHaveLength(2);

    const processing = await processingJob(store, a.id, 100);
    expect(await store.rejectJob(processing, 'too late', T0)).toBe(false);
    expect((await store.getJob(processing))?.state).toBe('processing');
    expect(await balanceOf(store, a.id)).toBe(900);
  });

  it('a reconciliation reason given to a settlement is recorded with it, by the one that wins only', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000);
    const job = newJob(a.id);
    expect(await store.createJobWithHold(job, 400, T0)).toBe('ok');
    expect(await store.rejectJob(job.id, 'stopped', T0 + 5, 'gateway stopped during create')).toBe(true);
    expect(await store.rejectJob(job.id, 'stopped', T0 + 6, 'gateway stopped during create')).toBe(false);
    const late = await processingJob(store, a.id, 100);
    const failure = { code: 'timeout', message: 'deadline', vendorData: {}, now: T0 + 7, reconcile: 'deadline passed' };
    expect(await store.failJob(late, failure)).toBe(true);
    expect(await store.failJob(late, failure)).toBe(false);
    const records = (await store.listReconcile(100)).filter((r) => r.jobId === job.id || r.jobId === late);
    expect(records.map((r) => [r.jobId, r.upstream, r.reason, r.createdAt]).sort()).toEqual(
      [
        [job.id, '(unknown)', 'gateway stopped during create', T0 + 5],
        [late, 'wan-main', 'deadline passed', T0 + 7],
      ].sort(),
    );
    expect(await balanceOf(store, a.id)).toBe(1_000);
  });

  it('refuses a hold the balance cannot cover and writes nothing', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 500);
    const job = newJob(a.id);
    expect(await store.createJobWithHold(job, 501, T0)).toBe('insufficient');
    expect(await store.getJob(job.id)).toBeUndefined();
    expect(await store.listLedger(a.id, { ref: job.id })).toEqual([]);
    expect(await balanceOf(store, a.id)).toBe(500);
    expect(await store.createJobWithHold(newJob(a.id), 500, T0)).toBe('ok');
    expect(await balanceOf(store, a.id)).toBe(0);
    await expect(store.createJobWithHold(newJob('no-such-account'), 1, T0)).rejects.toMatchObject({ status: 404 });
  });

  it('a top-up counts the money held by running jobs against the largest balance, so their release stays readable', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000);
    const job = newJob(a.id);
    expect(await store.createJobWithHold(job, 800, T0)).toBe('ok');
    await expect(store.topUp(a.id, Number.MAX_SAFE_INTEGER - 1_000 + 1, null, T0)).rejects.toMatchObject({ status: 400, param: 'amount' });
    expect(await balanceOf(store, a.id)).toBe(200);
    await store.topUp(a.id, Number.MAX_SAFE_INTEGER - 1_000, null, T0);
    expect(await store.failJob(job.id, { code: 'x', message: 'x', vendorData: {}, now: T0 })).toBe(true);
    expect(await balanceOf(store, a.id)).toBe(Number.MAX_SAFE_INTEGER);
    expect(await ledgerSum(store, a.id)).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('a hold must leave the money in flight elsewhere covered, and deducts only itself', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 500);
    expect(await store.createJobWithHold(newJob(a.id), 300, T0, 201)).toBe('insufficient');
    expect(await balanceOf(store, a.id)).toBe(500);
    expect(await store.createJobWithHold(newJob(a.id), 300, T0, 200)).toBe('ok');
    expect(await balanceOf(store, a.id)).toBe(200);
  });

  it('20 concurrent completions settle exactly once', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000_000);
    const id = await processingJob(store, a.id, 500_000);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.completeJob(id, completion(400_000 + i))));
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = 400_000 + results.indexOf(true);
    const entries = await store.listLedger(a.id, { ref: id });
    expect(entries.filter((e) => e.kind === 'release')).toHaveLength(1);
    expect(entries.filter((e) => e.kind === 'capture').map((e) => e.delta)).toEqual([-winner]);
    expect((await store.getJob(id))?.costMicros).toBe(winner);
    expect(await balanceOf(store, a.id)).toBe(1_000_000 - winner);
    expect(await ledgerSum(store, a.id)).toBe(1_000_000 - winner);
  });

  it('racing completion and failure: exactly one transition wins', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000);
    const id = await processingJob(store, a.id, 600);
    const fail = { code: 'timeout', message: 'deadline', vendorData: {}, now: T0 };
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? store.failJob(id, fail) : store.completeJob(id, completion(300)))),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    const state = (await store.getJob(id))?.state;
    expect(await balanceOf(store, a.id)).toBe(state === 'completed' ? 700 : 1_000);
    expect((await store.listLedger(a.id, { ref: id })).filter((e) => e.kind === 'release')).toHaveLength(1);
  });

  it('concurrent holds beyond the balance: only the affordable ones succeed', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000);
    const jobs = Array.from({ length: 15 }, () => newJob(a.id));
    const results = await Promise.all(jobs.map((j) => store.createJobWithHold(j, 150, T0)));
    expect(results.filter((r) => r === 'ok')).toHaveLength(6);
    expect(results.filter((r) => r === 'insufficient')).toHaveLength(9);
    expect(await balanceOf(store, a.id)).toBe(100);
    const created = await Promise.all(jobs.map((j) => store.getJob(j.id)));
    expect(created.filter((j) => j !== undefined)).toHaveLength(6);
    expect(await ledgerSum(store, a.id)).toBe(100);
  });

  it('poll lease: one winner, expiry, release by recordPoll', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000);
    const id = await processingJob(store, a.id, 100);
    const now = T0 + 10_000;
    const wins = await Promise.all(Array.from({ length: 10 }, () => store.acquirePollLease(id, now, 30_000)));
    expect(wins.filter(Boolean)).toHaveLength(1);
    expect((await store.getJob(id))?.leaseUntil).toBe(now + 30_000);
    expect(await store.acquirePollLease(id, now + 29_999, 30_000)).toBe(false);
    expect(await store.acquirePollLease(id, now + 30_000, 30_000)).toBe(true);

    await store.recordPoll(id, { vendorData: { task_status: 'RUNNING' }, progress: 42.5, nextPollAt: now + 40_000, now: now + 30_001 });
    expect(await store.getJob(id)).toMatchObject({ leaseUntil: null, progress: 42.5, nextPollAt: now + 40_000, vendorData: { task_status: 'RUNNING' }, updatedAt: now + 30_001 });
    expect(await store.acquirePollLease(id, now + 30_002, 1_000)).toBe(true);

    const submitting = newJob(a.id);
    await store.createJobWithHold(submitting, 1, T0);
    expect(await store.acquirePollLease(submitting.id, now, 1_000)).toBe(false);
    expect(await store.acquirePollLease('no-such-job', now, 1_000)).toBe(false);
  });

  it('dueJobs and overdueJobs pick processing jobs by time, lease and limit', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000_000);
    const late = await processingJob(store, a.id, 1, { nextPollAt: T0 + 3_000 });
    const early = await processingJob(store, a.id, 1, { nextPollAt: T0 + 1_000, deadlineAt: T0 + 50_000 });
    const future = await processingJob(store, a.id, 1, { nextPollAt: T0 + 99_000 });
    const leased = await processingJob(store, a.id, 1, { nextPollAt: T0 + 2_000, deadlineAt: T0 + 40_000 });
    const settled = await processingJob(store, a.id, 1, { nextPollAt: T0 + 500, deadlineAt: T0 + 1 });
    const submitting = newJob(a.id, { deadlineAt: T0 + 1 });
    await store.createJobWithHold(submitting, 1, T0);
    expect(await store.acquirePollLease(leased, T0 + 4_000, 60_000)).toBe(true);
    expect(await store.completeJob(settled, completion(1))).toBe(true);

    const now = T0 + 5_000;
    expect((await store.dueJobs(now, 10)).map((j) => j.id)).toEqual([early, late]);
    expect((await store.dueJobs(now, 1)).map((j) => j.id)).toEqual([early]);
    expect((await store.dueJobs(T0 + 70_000, 10)).map((j) => j.id)).toEqual([early, leased, late]);
    expect((await store.dueJobs(T0 + 99_000, 10)).map((j) => j.id)).toContain(future);

    expect(await store.overdueJobs(T0 + 39_999, 10)).toEqual([]);
    expect((await store.overdueJobs(T0 + 60_000, 10)).map((j) => j.id)).toEqual([leased, early]);
    expect((await store.overdueJobs(T0 + 60_000, 1)).map((j) => j.id)).toEqual([leased]);

    // Only 'submitting' rows created at or before the cut-off are stale.
    expect((await store.staleSubmittingJobs(T0, 10)).map((j) => j.id)).toEqual([submitting.id]);
    expect(await store.staleSubmittingJobs(T0 - 1, 10)).toEqual([]);
  });

  it('records reconcile entries, including an acceptance after the job settled', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000);
    await store.recordReconcile({ jobId: 'j-1', upstream: 'sora-a', reason: 'create timed out after send', now: T0 });
    const job = newJob(a.id);
    await store.createJobWithHold(job, 10, T0);
    await store.failJob(job.id, { code: 'x', message: 'y', vendorData: {}, now: T0 + 1 });
    await store.markJobSubmitted(job.id, { upstream: 'wan-b', taskId: 't-9', publicId: 'p', taskMeta: {}, nextPollAt: T0, now: T0 + 2 });
    expect((await store.getJob(job.id))?.state).toBe('failed');

    const list = await store.listReconcile();
    expect(list.map((r) => [r.jobId, r.upstream])).toEqual([[job.id, 'wan-b'], ['j-1', 'sora-a']]);
    expect(list[0].reason).toContain('t-9');
    expect(list[1]).toMatchObject({ reason: 'create timed out after send', createdAt: T0 });
    expect(await store.listReconcile(1)).toHaveLength(1);
  });

  it('a job list narrowed by model patterns keeps exactly the jobs the patterns name, as the key check does', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000_000);
    // Names that SQL pattern syntax would read as wildcards, escapes or classes, and case variants.
    const models = ['sora-2', 'sora-2-pro', 'sora_2', 'sora%2', 'Sora-2', 'wan[x]', 'wanx', 'a\\b', 'ab', 'sora-22'];
    for (const model of models) {
      const job = newJob(a.id, { model });
      expect(await store.createJobWithHold(job, 10, T0)).toBe('ok');
      await store.markJobSubmitted(job.id, { upstream: 'u', taskId: `t-${job.id}`, publicId: `p-${job.id}`, taskMeta: {}, nextPollAt: T0, now: T0 + 1 });
    }
    const cases: string[][] = [
      ['sora-2'], ['sora-?'], ['sora?2'], ['sora_2'], ['sora%2'], ['sora-*'], ['*-pro'], ['wan[x]'], ['wan?x?'],
      ['a\\b'], ['a?b'], ['s*'], ['S*'], ['sora-2', 'wan*'], ['nothing'], ['*'], ['**'], [],
    ];
    for (const patterns of cases) {
      const listed = await store.listJobs(a.id, { limit: 100, order: 'asc', modelPatterns: patterns });
      const expected = models.filter((m) => patterns.some((g) => globMatch(g, m))).sort();
      expect(listed.map((j) => j.model).sort(), JSON.stringify(patterns)).toEqual(expected);
    }
  });
}
