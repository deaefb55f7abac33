import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/** A refresh that fails unexpectedly hands its poll lease back instead of leaving the job unpolled until it expires. */
let sim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 50 });
  gw = await startTestGateway({ ...upstreamsFor([{ module: sora, sim }]), video: { lease_ms: 600_000 } });
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

describe('poll lease after a failed refresh', () => {
  it('is released, and the next refresh settles the job', async () => {
    const { key } = await gw.newKey(100);
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'x', seconds: 4 } });
    expect(created.status, created.text).toBe(200);
    const jobId = gw.services.video.deps.sealer.open(created.json.id)!.j;
    await new Promise((r) => setTimeout(r, 100)); // the simulated task is done
    const store = gw.services.video.deps.store;
    const complete = store.completeJob.bind(store);
    store.completeJob = async () => {
      throw new Error('database hiccup');
    };
    try {
      await gw.services.video.refresh((await store.getJob(jobId))!);
    } finally {
      store.completeJob = complete;
    }
    const after = (await store.getJob(jobId))!;
    expect(after.state).toBe('processing');
    expect(after.leaseUntil).toBeNull(); // with a 10-minute lease, nobody could have polled it before
    await gw.services.video.refresh(after);
    expect((await store.getJob(jobId))!.state).toBe('completed');
  });
});
