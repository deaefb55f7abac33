import fc from 'fast-check';
import { expect, it } from 'vitest';
import type { SqlDriver } from '../../src/store/driver.js';
import { int } from '../../src/store/rows.js';
import type { UsageFilter, UsageRow } from '../../src/store/types.js';
import type { Ctx } from './cases-accounts.js';
import { completion, newJob, uid } from './harness.js';

/**
 * The ledger's running totals (store/rollups.ts) against the ledger itself, after any mix of holds,
 * captures, releases (failed and rejected jobs), charges one by one and in batches (duplicates,
 * refused items), made once or twice at the same time: a key's lifetime spend and every usage
 * report must equal what summing the ledger rows gives, on whole days and on ranges that start or
 * end within a day.
 */
const DAY = 86_400_000;
/** Midnight UTC; the commands fall in the five days after it, at any millisecond. */
const D0 = Date.UTC(2026, 2, 1);
const KEYS = 3;
const MODELS = ['m-one', 'm-two'];

type Cmd =
  | { op: 'hold'; key: number; model: number; amount: number; at: number }
  | { op: 'submit'; job: number }
  | { op: 'complete'; job: number; cost: number; at: number; twice: boolean }
  | { op: 'fail'; job: number; at: number; twice: boolean }
  | { op: 'reject'; job: number; at: number; twice: boolean }
  | { op: 'charge'; key: number; model: number; ref: number; amount: number; at: number; twice: boolean }
  | { op: 'batch'; items: Array<{ key: number; model: number; ref: number; amount: number; at: number }> }
  | { op: 'topUp'; amount: number };

const at = fc.integer({ min: 0, max: 5 * DAY - 1 }).map((t) => D0 + t);
/** Key index KEYS stands for a charge without a key (a row written before the ledger recorded keys). */
const key = fc.nat(KEYS);
const model = fc.nat(MODELS.length);
/** A batch's charges fall in two days, so that several of them often share a key, day and model. */
const item = fc.record({ key, model, ref: fc.nat(40), amount: fc.integer({ min: -1, max: 900 }), at: fc.integer({ min: 0, max: 2 * DAY - 1 }).map((t) => D0 + t) });
const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  fc.record({ op: fc.constant('hold' as const), key: fc.nat(KEYS - 1), model: fc.nat(MODELS.length - 1), amount: fc.integer({ min: 0, max: 3_000 }), at }),
  fc.record({ op: fc.constant('submit' as const), job: fc.nat(9) }),
  fc.record({ op: fc.constant('complete' as const), job: fc.nat(9), cost: fc.integer({ min: 0, max: 3_000 }), at, twice: fc.boolean() }),
  fc.record({ op: fc.constant('fail' as const), job: fc.nat(9), at, twice: fc.boolean() }),
  fc.record({ op: fc.constant('reject' as const), job: fc.nat(9), at, twice: fc.boolean() }),
  fc.record({ op: fc.constant('charge' as const), key, model, ref: fc.nat(40), amount: fc.integer({ min: 0, max: 900 }), at, twice: fc.boolean() }),
  fc.record({ op: fc.constant('batch' as const), items: fc.array(item, { minLength: 1, maxLength: 12, size: 'max' }) }),
  fc.record({ op: fc.constant('topUp' as const), amount: fc.integer({ min: 1, max: 5_000 }) }),
);

/** Report ranges: whole days, and ranges cut within a day at either end or both, shorter than a day too. */
const range = fc
  .tuple(fc.integer({ min: -DAY, max: 6 * DAY }), fc.integer({ min: 1, max: 6 * DAY }), fc.boolean(), fc.boolean())
  .map(([start, length, wholeFrom, wholeTo]) => {
    const from = D0 + (wholeFrom ? Math.floor(start / DAY) * DAY : start);
    const to = wholeTo ? Math.ceil((from + length) / DAY) * DAY : from + length;
    return { from, to: to > from ? to : from + DAY };
  });

/** The report as the ledger gives it: the one query the store ran over the ledger's rows before. */
async function fromLedger(db: SqlDriver, f: UsageFilter): Promise<Map<string, { spent: number; requests: number }>> {
  const group = f.groupBy === 'day' ? `created_at / ${DAY}` : f.groupBy === 'model' ? 'model' : 'key_id';
  const where = ["kind IN ('capture', 'charge')", 'created_at >= ?', 'created_at < ?'];
  const params: Array<string | number> = [f.from, f.to];
  if (f.accountId !== undefined) (where.push('account_id = ?'), params.push(f.accountId));
  if (f.keyId !== undefined) (where.push('key_id = ?'), params.push(f.keyId));
  const rows = await db.query(`SELECT ${group} AS grp, SUM(0 - delta) AS spent, COUNT(*) AS n FROM ledger WHERE ${where.join(' AND ')} GROUP BY ${group}`, params);
  const name = (g: unknown) => (f.groupBy === 'day' ? new Date(int(g) * DAY).toISOString().slice(0, 10) : String(g ?? ''));
  return new Map(rows.map((r) => [name(r.grp), { spent: int(r.spent), requests: int(r.n) }]));
}

const asMap = (rows: UsageRow[]) => new Map(rows.map((r) => [r.group, { spent: r.spent, requests: r.requests }]));

/** Days in order; models and keys by spend, biggest first, then by name. */
function inReportOrder(groupBy: UsageFilter['groupBy'], rows: UsageRow[]): boolean {
  return rows.every((r, i) => {
    if (i === 0) return true;
    const p = rows[i - 1]!;
    return groupBy === 'day' ? p.group < r.group : p.spent > r.spent || (p.spent === r.spent && p.group < r.group);
  });
}

/** Both tables, row for row, against the same sums over the whole ledger. */
export async function expectTablesMatchLedger(db: SqlDriver): Promise<void> {
  const totals = (await db.query('SELECT key_id, spent FROM key_totals')).map((r) => `${String(r.key_id)}=${int(r.spent)}`).sort();
  const summed = (await db.query('SELECT key_id, SUM(0 - delta) AS spent FROM ledger WHERE key_id IS NOT NULL GROUP BY key_id'))
    .map((r) => `${String(r.key_id)}=${int(r.spent)}`)
    .sort();
  expect(totals).toEqual(summed);
  const daily = (await db.query('SELECT key_id, day, model, account_id, spent, requests FROM usage_daily'))
    .map((r) => [r.key_id, int(r.day), r.model, r.account_id, int(r.spent), int(r.requests)].join('|'))
    .sort();
  const days = (
    await db.query(
      `SELECT COALESCE(key_id, '') AS key_id, created_at / ${DAY} AS day, COALESCE(model, '') AS model, account_id, SUM(0 - delta) AS spent, COUNT(*) AS n
         FROM ledger WHERE kind IN ('capture', 'charge') GROUP BY COALESCE(key_id, ''), created_at / ${DAY}, COALESCE(model, ''), account_id`,
    )
  )
    .map((r) => [r.key_id, int(r.day), r.model, r.account_id, int(r.spent), int(r.n)].join('|'))
    .sort();
  expect(daily).toEqual(days);
}

/** Runs `call` once, or twice at the same time. */
async function fire(twice: boolean, call: () => Promise<unknown>): Promise<void> {
  await Promise.all(twice ? [call(), call()] : [call()]);
}

export function rollupCases(ctx: () => Ctx): void {
  it('counts a batch once per row it wrote, on a day and model that already had charges', async () => {
    const { store } = ctx();
    const account = await store.createAccount({ name: uid('acct'), balance: 0, upstreams: null, limits: {}, now: D0 });
    const keyId = uid('key');
    const by = { keyId, model: 'm-one' };
    const charge = (ref: string, amount: number, now: number) => ({ accountId: account.id, amount, ref, note: null, now, by });
    expect(await store.charge(account.id, 100, 'first', null, D0 + 10, by)).toBe('ok');
    // Two new rows on that key, day and model, a duplicate of the first and one twice in the batch.
    expect(await store.chargeMany([charge('a', 20, D0 + 20), charge('first', 999, D0 + 30), charge('b', 3, D0 + 40), charge('a', 20, D0 + 50)])).toEqual([
      'ok',
      'duplicate',
      'ok',
      'duplicate',
    ]);
    const day = { keyId, from: D0, to: D0 + DAY };
    expect(await store.usage({ ...day, groupBy: 'model' })).toEqual([{ group: 'm-one', spent: 123, requests: 3 }]);
    expect(await store.usage({ ...day, from: D0 + 15, groupBy: 'day' })).toEqual([{ group: '2026-03-01', spent: 23, requests: 2 }]);
    expect((await store.keySpend(keyId, D0 + DAY)).total).toBe(123);
  });

  it("a key's lifetime spend and the usage reports equal the sums over the ledger, whatever was written", async () => {
    const { store } = ctx();
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 10, maxLength: 40, size: 'max' }), fc.array(range, { minLength: 2, maxLength: 4 }), async (cmds, ranges) => {
        const run = uid('run');
        const accounts = [
          await store.createAccount({ name: `${run}-a`, balance: 10_000, upstreams: null, limits: {}, now: D0 }),
          await store.createAccount({ name: `${run}-b`, balance: 10_000, upstreams: null, limits: {}, now: D0 }),
        ];
        const keys = Array.from({ length: KEYS }, (_, i) => ({ id: `${run}-key${i}`, accountId: accounts[i % 2]!.id }));
        const jobs: Array<{ id: string; key: number; hold: number; state: 'submitting' | 'processing' | 'settled' }> = [];
        const spent = new Array<number>(KEYS).fill(0);
        const charged = new Set<string>();
        const by = (k: number, m: number) => (k < KEYS ? { keyId: keys[k]!.id, model: MODELS[m] ?? null } : undefined);
        const accountOf = (k: number) => accounts[k < KEYS ? k % 2 : 0]!.id;

        for (const c of cmds) {
          if (c.op === 'topUp') await store.topUp(accounts[0]!.id, c.amount, null, D0);
          else if (c.op === 'hold') {
            const job = newJob(keys[c.key]!.accountId, { keyId: keys[c.key]!.id, model: MODELS[c.model]!, createdAt: c.at, deadlineAt: c.at + DAY });
            if ((await store.createJobWithHold(job, c.amount, c.at)) === 'ok') {
              jobs.push({ id: job.id, key: c.key, hold: c.amount, state: 'submitting' });
              spent[c.key]! += c.amount;
            }
          } else if (c.op === 'charge') {
            const ref = `${run}:${c.ref}`;
            await fire(c.twice, () => store.charge(accountOf(c.key), c.amount, ref, null, c.at, by(c.key, c.model)));
            if (!charged.has(ref) && c.key < KEYS) spent[c.key]! += c.amount;
            charged.add(ref);
          } else if (c.op === 'batch') {
            const items = c.items.map((i) => ({ accountId: accountOf(i.key), amount: i.amount, ref: `${run}:${i.ref}`, note: null, now: i.at, by: by(i.key, i.model) }));
            const results = await store.chargeMany(items);
            results.forEach((r, n) => {
              const i = c.items[n]!;
              if (r === 'ok' && i.key < KEYS) spent[i.key]! += i.amount;
              if (r === 'ok') charged.add(items[n]!.ref);
            });
          } else {
            const j = jobs.length ? jobs[c.job % jobs.length]! : undefined;
            if (!j) continue;
            if (c.op === 'submit') {
              await store.markJobSubmitted(j.id, { upstream: 'u', taskId: 't', publicId: `vid_${j.id}`, taskMeta: {}, nextPollAt: D0, now: D0 });
              if (j.state === 'submitting') j.state = 'processing';
            } else if (c.op === 'complete') {
              await fire(c.twice, () => store.completeJob(j.id, completion(c.cost, c.at)));
              if (j.state === 'processing') (spent[j.key]! += c.cost - j.hold), (j.state = 'settled');
            } else if (c.op === 'fail') {
              await fire(c.twice, () => store.failJob(j.id, { code: 'f', message: 'm', vendorData: {}, now: c.at }));
              if (j.state !== 'settled') (spent[j.key]! -= j.hold), (j.state = 'settled');
            } else {
              await fire(c.twice, () => store.rejectJob(j.id, 'r', c.at));
              if (j.state === 'submitting') (spent[j.key]! -= j.hold), (j.state = 'settled');
            }
          }
        }

        await expectTablesMatchLedger(store.driver);
        for (let k = 0; k < KEYS; k++) {
          // Captures and charges, plus the holds of the jobs still running.
          expect((await store.keySpend(keys[k]!.id, D0 + 6 * DAY)).total).toBe(spent[k]);
        }
        for (const r of ranges) {
          for (const groupBy of ['day', 'model', 'key'] as const) {
            for (const filter of [{ keyId: keys[0]!.id }, { accountId: accounts[1]!.id }, {}]) {
              const f: UsageFilter = { ...filter, from: r.from, to: r.to, groupBy };
              const rows = await store.usage(f);
              expect(asMap(rows), JSON.stringify(f)).toEqual(await fromLedger(store.driver, f));
              expect(inReportOrder(groupBy, rows), JSON.stringify(rows)).toBe(true);
            }
          }
        }
      }),
      { numRuns: 25 },
    );
  });
}
