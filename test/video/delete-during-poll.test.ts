import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as seedance } from '../../src/video/vendors/seedance/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * A DELETE of a processing job while another request or instance holds its poll lease (its vendor call
 * in flight). Cancelling on the row as it stands could remove, for free, a task that finished during
 * that poll (Ark's DELETE also removes a finished task): the delete waits for the poll to end and asks
 * the vendor itself; a lease held past its length makes the delete a 503 to retry.
 */
const LEASE_MS = 1_000;
let sim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  sim = await seedance.simulator.start({ taskMs: 60_000 });
  const cfg = upstreamsFor([{ module: seedance, sim }]);
  gw = await startTestGateway({ ...cfg, video: { poll_interval_ms: 600_000, lease_ms: LEASE_MS } });
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

async function createJob(key: string): Promise<{ id: string; jobId: string }> {
  const model = seedance.simulator.demo(sim).models[0]!.name;
  const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'a cat', seconds: 5 } });
  expect(created.status, created.text).toBe(200);
  return { id: created.json.id, jobId: gw.services.video.deps.sealer.open(created.json.id)!.j };
}

describe('DELETE of a job another caller is polling', () => {
  it('waits for that poll to end, then settles a task that finished meanwhile instead of cancelling it', async () => {
    const { key, account } = await gw.newKey(100);
    sim.settings.taskMs = 300;
    const { id, jobId } = await createJob(key);
    sim.settings.taskMs = 60_000;
    const { store, clock } = gw.services.video.deps;
    // Another instance's poll: it holds the lease while the vendor finishes the task.
    expect(await store.acquirePollLease(jobId, clock.now(), LEASE_MS)).toBe(true);
    const deleting = call(gw, 'DELETE', `/v1/videos/${id}`, { key });
    await new Promise((r) => setTimeout(r, 500));
    // That poll ends (it learnt nothing yet) and hands the lease back.
    const job = await store.getJob(jobId);
    await store.recordPoll(jobId, { vendorData: job!.vendorData, progress: job!.progress, nextPollAt: clock.now() + 600_000, now: clock.now() });
    const del = await deleting;
    expect(del.status, del.text).toBe(200);
    const after = await store.getJob(jobId);
    expect(after).toMatchObject({ state: 'completed' });
    expect(after!.costMicros).toBeGreaterThan(0);
    expect(await gw.balance(account)).toBe(100_000_000 - after!.costMicros!);
    expect(sim.received('DELETE', /./)).toHaveLength(0);
  });

  it('asks the vendor itself once a dead poller\'s lease runs out, and cancels a task still running', async () => {
    const { key, account } = await gw.newKey(100);
    const before = await gw.balance(account);
    const { id, jobId } = await createJob(key);
    const { store, clock } = gw.services.video.deps;
    // A poller that died holding the lease never hands it back; the lease runs out after LEASE_MS.
    expect(await store.acquirePollLease(jobId, clock.now(), LEASE_MS)).toBe(true);
    const cancels = sim.received('DELETE', /./).length;
    const started = Date.now();
    const del = await call(gw, 'DELETE', `/v1/videos/${id}`, { key });
    expect(del.status, del.text).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(LEASE_MS - 100);
    expect(await store.getJob(jobId)).toMatchObject({ state: 'failed', costMicros: null });
    expect(sim.received('DELETE', /./)).toHaveLength(cancels + 1);
    expect(await gw.balance(account)).toBe(before);
  });

  it('is a 503 job_busy, with nothing cancelled, when the lease is held past its length', async () => {
    const { key } = await gw.newKey(100);
    const { id, jobId } = await createJob(key);
    const { store, clock } = gw.services.video.deps;
    // Held far longer than video.lease_ms (as by an instance configured with a longer lease).
    expect(await store.acquirePollLease(jobId, clock.now(), 60_000)).toBe(true);
    const cancels = sim.received('DELETE', /./).length;
    const del = await call(gw, 'DELETE', `/v1/videos/${id}`, { key });
    expect(del.status, del.text).toBe(503);
    expect(del.json.error).toMatchObject({ type: 'server_error', code: 'job_busy' });
    expect(del.headers.get('retry-after')).toBe('1');
    expect(sim.received('DELETE', /./)).toHaveLength(cancels);
    expect(await store.getJob(jobId)).toMatchObject({ state: 'processing', deletedAt: null });
    // The job is still the client's to read.
    expect((await call(gw, 'GET', `/v1/videos/${id}`, { key })).status).toBe(200);
  });
});
