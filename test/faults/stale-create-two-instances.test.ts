import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import type { Store } from '../../src/store/types.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';
import { newJob, postgresBackend } from '../store/harness.js';

/**
 * A create left 'submitting' by a process that died, found by the refreshers of two live instances
 * on one PostgreSQL database in the same moment (both read it before either settles it). Its hold is
 * released once, and it is recorded for reconciliation once: the record commits with the release
 * that wins, so an operator is not sent to the vendor's console twice for one task. The same goes
 * for a job the deadline ends (its vendor task may still bill).
 */
const pg = postgresBackend();
let sim: SimServer;
let a: TestGateway;
let b: TestGateway;
const STALE_MS = 60_000;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 600_000 });
  const database = (await pg.fresh()).url;
  const cfg = { ...upstreamsFor([{ module: sora, sim }]), database, video: { stale_submitting_ms: STALE_MS } };
  a = await startTestGateway(cfg);
  b = await startTestGateway(cfg);
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await sim?.close();
  await pg.dispose();
});

/** Makes each store's `read` wait until both instances have read, as two refreshers ticking together can. */
function together<K extends 'staleSubmittingJobs' | 'overdueJobs'>(read: K): () => void {
  const stores = [a.services.store, b.services.store] as Store[];
  const originals = stores.map((s) => s[read].bind(s));
  let arrived = 0;
  let go!: () => void;
  const both = new Promise<void>((r) => (go = r));
  stores.forEach((s, i) => {
    (s as any)[read] = async (...args: unknown[]) => {
      const rows = await (originals[i] as (...x: unknown[]) => Promise<unknown>)(...args);
      if (++arrived === 2) go();
      await both;
      return rows;
    };
  });
  return () => stores.forEach((s, i) => ((s as any)[read] = originals[i]));
}

async function accountId(gw: TestGateway, name: string): Promise<string> {
  return (await gw.services.store.getAccountByName(name))!.id;
}

describe('two instances settle one abandoned job together', () => {
  it('a create a dead process left submitting: released once, recorded for reconciliation once', async () => {
    const { account } = await b.newKey(10);
    const id = await accountId(a, account);
    const store = a.services.store;
    const now = Date.now();
    const job = newJob(id, { vendor: 'sora', model: 'sora-2', createdAt: now - 2 * STALE_MS, deadlineAt: now + 3_600_000 });
    expect(await store.createJobWithHold(job, 400_000, now - 2 * STALE_MS)).toBe('ok');

    const restore = together('staleSubmittingJobs');
    try {
      await Promise.all([a.services.poller.tick(), b.services.poller.tick()]);
    } finally {
      restore();
    }
    expect((await store.getJob(job.id))!.state).toBe('rejected');
    expect((await store.listLedger(id, { ref: job.id })).map((e) => e.kind).sort()).toEqual(['hold', 'release']);
    expect(await a.balance(account)).toBe(10_000_000);
    const records = (await store.listReconcile(200)).filter((r) => r.jobId === job.id);
    expect(records, JSON.stringify(records)).toHaveLength(1);
  });

  it('a job past its deadline: released once, recorded for reconciliation once', async () => {
    const { account } = await a.newKey(10);
    const id = await accountId(a, account);
    const store = a.services.store;
    const now = Date.now();
    const job = newJob(id, { vendor: 'sora', model: 'sora-2', createdAt: now - 10_000, deadlineAt: now - 1 });
    expect(await store.createJobWithHold(job, 400_000, now - 10_000)).toBe('ok');
    const upstream = (a.services.catalog.servingUpstreams('sora-2', (await a.services.store.getAccountByName(account))!)[0])!.name;
    expect(await store.markJobSubmitted(job.id, { upstream, taskId: 'task-late', publicId: `vid-${job.id}`, taskMeta: {}, nextPollAt: now + 60_000, now })).toBe(true);

    const restore = together('overdueJobs');
    try {
      await Promise.all([a.services.poller.tick(), b.services.poller.tick()]);
    } finally {
      restore();
    }
    expect((await store.getJob(job.id))!).toMatchObject({ state: 'failed', errorCode: 'timeout' });
    expect((await store.listLedger(id, { ref: job.id })).map((e) => e.kind).sort()).toEqual(['hold', 'release']);
    const records = (await store.listReconcile(200)).filter((r) => r.jobId === job.id);
    expect(records, JSON.stringify(records)).toHaveLength(1);
    expect(records[0]!.reason).toMatch(/deadline passed with vendor task task-late unsettled/);
  });
});
