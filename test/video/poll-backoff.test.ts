import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { refreshJob } from '../../src/video/refresh.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * A job whose polls keep failing (its upstream unreachable, or missing from the config after a
 * restart) is polled less often each time, up to once a minute, instead of every other poll
 * interval for hours: with many jobs in flight that is the load on an upstream that is down, and a
 * warning line per job per retry. A poll that answers brings the normal interval back.
 */
let sim: SimServer;
let gw: TestGateway;
const POLL_MS = 2_000;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 600_000 });
  gw = await startTestGateway({ ...upstreamsFor([{ module: sora, sim }]), video: { poll_interval_ms: POLL_MS } });
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

/** One refresh at the moment the job is next due; returns the wait it set before the next one. */
async function pollWhenDue(jobId: string): Promise<number> {
  const job = (await gw.services.store.getJob(jobId))!;
  const now = Math.max(job.nextPollAt, job.updatedAt + 1);
  await refreshJob({ ...gw.services.video.deps, clock: { now: () => now } }, job);
  return (await gw.services.store.getJob(jobId))!.nextPollAt - now;
}

describe('polls that keep failing back off', () => {
  it('each failed poll waits twice as long as the one before, up to a minute; an answer resets it', async () => {
    const { key } = await gw.newKey(10);
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'x', seconds: 4 } });
    expect(created.status, created.text).toBe(200);
    const jobId = gw.services.video.deps.sealer.open(created.json.id)!.j;

    sim.inject({ kind: 'reset' }, 8, /^\/v1\/videos\/[^/]+$/);
    const waits: number[] = [];
    for (let i = 0; i < 8; i++) waits.push(await pollWhenDue(jobId));
    expect(waits).toEqual([4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000, 60_000]);
    expect((await gw.services.store.getJob(jobId))!.state).toBe('processing');

    // The upstream answers again (the task is still running): the normal interval, and a later
    // failure starts the back-off over.
    expect(await pollWhenDue(jobId)).toBe(POLL_MS);
    sim.inject({ kind: 'reset' }, 1, /^\/v1\/videos\/[^/]+$/);
    expect(await pollWhenDue(jobId)).toBe(2 * POLL_MS);
  });
});
