import fc from 'fast-check';
import { expect, it } from 'vitest';
import type { JobState } from '../../src/store/job-types.js';
import type { Ctx } from './cases-accounts.js';
import { T0, balanceOf, completion, ledgerSum, newJob, uid } from './harness.js';

type Cmd =
  | { op: 'topUp'; amount: number }
  | { op: 'hold'; amount: number }
  | { op: 'submit'; job: number }
  | { op: 'complete'; job: number; cost: number; twice: boolean }
  | { op: 'fail'; job: number; twice: boolean }
  | { op: 'reject'; job: number; twice: boolean }
  | { op: 'charge'; ref: number; amount: number; twice: boolean };

const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  fc.record({ op: fc.constant('topUp' as const), amount: fc.integer({ min: 1, max: 1_000 }) }),
  fc.record({ op: fc.constant('hold' as const), amount: fc.integer({ min: 0, max: 2_000 }) }),
  fc.record({ op: fc.constant('submit' as const), job: fc.nat(9) }),
  fc.record({ op: fc.constant('complete' as const), job: fc.nat(9), cost: fc.integer({ min: 0, max: 3_000 }), twice: fc.boolean() }),
  fc.record({ op: fc.constant('fail' as const), job: fc.nat(9), twice: fc.boolean() }),
  fc.record({ op: fc.constant('reject' as const), job: fc.nat(9), twice: fc.boolean() }),
  fc.record({ op: fc.constant('charge' as const), ref: fc.nat(3), amount: fc.integer({ min: 0, max: 500 }), twice: fc.boolean() }),
);

interface ModelJob {
  id: string;
  hold: number;
  state: JobState;
}

/** Runs `call` once, or twice at the same time, and returns how many calls reported success. */
async function fire<T>(twice: boolean, call: () => Promise<T>, won: (r: T) => boolean): Promise<number> {
  const results = await Promise.all(twice ? [call(), call()] : [call()]);
  return results.filter(won).length;
}

export function propertyCases(ctx: () => Ctx): void {
  it('any sequence keeps balance == sum(ledger) and settles each job at most once', async () => {
    const { store } = ctx();
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 5_000 }), fc.array(cmd, { maxLength: 25 }), async (opening, cmds) => {
        const account = await store.createAccount({ name: uid('prop'), balance: opening, upstreams: null, limits: {}, now: T0 });
        const run = uid('run');
        let balance = opening;
        const jobs: ModelJob[] = [];
        const charged = new Set<number>();
        const pick = (i: number): ModelJob | undefined => (jobs.length ? jobs[i % jobs.length] : undefined);

        for (const c of cmds) {
          if (c.op === 'topUp') {
            balance += c.amount;
            expect((await store.topUp(account.id, c.amount, null, T0)).balance).toBe(balance);
          } else if (c.op === 'hold') {
            const job = newJob(account.id);
            const expected = balance >= c.amount ? 'ok' : 'insufficient';
            expect(await store.createJobWithHold(job, c.amount, T0)).toBe(expected);
            if (expected === 'ok') {
              balance -= c.amount;
              jobs.push({ id: job.id, hold: c.amount, state: 'submitting' });
            }
          } else if (c.op === 'charge') {
            const ok = await fire(c.twice, () => store.charge(account.id, c.amount, `${run}:${c.ref}`, null, T0), (r) => r === 'ok');
            expect(ok).toBe(charged.has(c.ref) ? 0 : 1);
            if (!charged.has(c.ref)) balance -= c.amount;
            charged.add(c.ref);
          } else {
            const j = pick(c.job);
            if (!j) continue;
            if (c.op === 'submit') {
              await store.markJobSubmitted(j.id, { upstream: 'u', taskId: 't', publicId: 'p', taskMeta: {}, nextPollAt: T0, now: T0 });
              if (j.state === 'submitting') j.state = 'processing';
            } else if (c.op === 'complete') {
              const wins = await fire(c.twice, () => store.completeJob(j.id, completion(c.cost)), Boolean);
              expect(wins).toBe(j.state === 'processing' ? 1 : 0);
              if (j.state === 'processing') {
                balance += j.hold - c.cost;
                j.state = 'completed';
              }
            } else if (c.op === 'fail') {
              const fail = { code: 'f', message: 'm', vendorData: {}, now: T0 };
              const wins = await fire(c.twice, () => store.failJob(j.id, fail), Boolean);
              const open = j.state === 'processing' || j.state === 'submitting';
              expect(wins).toBe(open ? 1 : 0);
              if (open) {
                balance += j.hold;
                j.state = 'failed';
              }
            } else {
              await fire(c.twice, () => store.rejectJob(j.id, 'r', T0), () => true);
              if (j.state === 'submitting') {
                balance += j.hold;
                j.state = 'rejected';
              }
            }
          }
        }

        expect(await balanceOf(store, account.id)).toBe(balance);
        expect(await ledgerSum(store, account.id)).toBe(balance);
        const entries = await store.listLedger(account.id, { limit: 10_000 });
        for (const j of jobs) {
          expect((await store.getJob(j.id))?.state).toBe(j.state);
          const kinds = entries.filter((e) => e.ref === j.id).map((e) => e.kind).sort();
          const settled = j.state !== 'submitting' && j.state !== 'processing';
          const want = ['hold', ...(settled ? ['release'] : []), ...(j.state === 'completed' ? ['capture'] : [])].sort();
          expect(kinds).toEqual(want);
        }
      }),
      { numRuns: 40 },
    );
  });
}
