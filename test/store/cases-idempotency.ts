import { expect, it } from 'vitest';
import type { Ctx } from './cases-accounts.js';
import { T0, balanceOf, makeAccount, newJob } from './harness.js';

const DAY = 86_400_000;
const claimOf = (accountId: string, claim: string, over: { now?: number; fingerprint?: string } = {}) => ({
  accountId,
  key: 'order-7',
  claim,
  endpoint: 'POST /v1/videos/generations',
  fingerprint: over.fingerprint ?? 'f1',
  now: over.now ?? T0,
  expiresAt: (over.now ?? T0) + DAY,
});

export function idempotencyCases(ctx: () => Ctx): void {
  it('idempotency keys: the first claim wins; the others read its record; accounts do not share keys', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000);
    const b = await makeAccount(store, 1_000);
    const answers = await Promise.all(['c1', 'c2', 'c3', 'c4'].map((c) => store.claimIdempotencyKey(claimOf(a.id, c))));
    expect(answers.filter((x) => x === 'claimed')).toHaveLength(1);
    const winner = ['c1', 'c2', 'c3', 'c4'][answers.indexOf('claimed')]!;
    for (const x of answers.filter((y) => y !== 'claimed'))
      expect(x).toMatchObject({ accountId: a.id, key: 'order-7', claim: winner, fingerprint: 'f1', jobId: null, status: null, claimedAt: T0, expiresAt: T0 + DAY });
    expect(await store.claimIdempotencyKey(claimOf(b.id, 'other'))).toBe('claimed');
  });

  it('idempotency keys: a job is linked only by the holder of the key, in its hold transaction', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000);
    expect(await store.claimIdempotencyKey(claimOf(a.id, 'first'))).toBe('claimed');
    // Taken for abandoned: the first request, alive after all, makes nothing and holds nothing.
    expect(await store.retakeIdempotencyKey(claimOf(a.id, 'second', { now: T0 + 1 }), { claim: 'first', jobId: null })).toBe(true);
    const lost = newJob(a.id, { idempotency: { accountId: a.id, key: 'order-7', claim: 'first' } });
    expect(await store.createJobWithHold(lost, 400, T0)).toBe('key_lost');
    expect(await store.getJob(lost.id)).toBeUndefined();
    expect(await balanceOf(store, a.id)).toBe(1_000);
    expect(await store.listLedger(a.id)).toHaveLength(1);

    const made = newJob(a.id, { idempotency: { accountId: a.id, key: 'order-7', claim: 'second' } });
    expect(await store.createJobWithHold(made, 400, T0)).toBe('ok');
    expect(await store.claimIdempotencyKey(claimOf(a.id, 'third'))).toMatchObject({ claim: 'second', jobId: made.id });
    // A record judged job-less is not retaken once a job is linked to it.
    expect(await store.retakeIdempotencyKey(claimOf(a.id, 'third'), { claim: 'second', jobId: null })).toBe(false);
    // Nor does a failing holder release a key whose job exists.
    await store.releaseIdempotencyKey({ accountId: a.id, key: 'order-7', claim: 'second' });
    expect(await store.claimIdempotencyKey(claimOf(a.id, 'fourth'))).toMatchObject({ jobId: made.id });
    await store.finishIdempotencyKey({ accountId: a.id, key: 'order-7', claim: 'second' }, 200, null);
    expect(await store.claimIdempotencyKey(claimOf(a.id, 'fifth'))).toMatchObject({ jobId: made.id, status: 200 });
  });

  it('idempotency keys: a released key, or one whose job was refused, is free again', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000);
    expect(await store.claimIdempotencyKey(claimOf(a.id, 'first'))).toBe('claimed');
    await store.releaseIdempotencyKey({ accountId: a.id, key: 'order-7', claim: 'someone-else' });
    expect(await store.claimIdempotencyKey(claimOf(a.id, 'x'))).toMatchObject({ claim: 'first' });
    const job = newJob(a.id, { idempotency: { accountId: a.id, key: 'order-7', claim: 'first' } });
    expect(await store.createJobWithHold(job, 400, T0)).toBe('ok');
    expect(await store.rejectJob(job.id, 'vendor said no', T0 + 1)).toBe(true);
    await store.releaseIdempotencyKey({ accountId: a.id, key: 'order-7', claim: 'first' });
    expect(await store.claimIdempotencyKey(claimOf(a.id, 'second', { fingerprint: 'f2' }))).toBe('claimed');
  });

  it('idempotency keys: expired records are pruned in bounded batches', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000);
    for (let i = 0; i < 5; i++) await store.claimIdempotencyKey({ ...claimOf(a.id, `c${i}`), key: `k${i}`, expiresAt: T0 + i });
    expect(await store.pruneIdempotencyKeys(T0 + 3, 2)).toBe(2);
    expect(await store.pruneIdempotencyKeys(T0 + 3, 100)).toBe(2);
    expect(await store.pruneIdempotencyKeys(T0 + 3, 100)).toBe(0);
    expect(await store.claimIdempotencyKey({ ...claimOf(a.id, 'again'), key: 'k4' })).toMatchObject({ claim: 'c4' });
    expect(await store.claimIdempotencyKey({ ...claimOf(a.id, 'again'), key: 'k0' })).toBe('claimed');
  });
}
