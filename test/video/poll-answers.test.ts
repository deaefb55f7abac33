import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/** GET /v1/videos/{id} answers from rendered text: what it must still do while a job is polled often. */
let sim: SimServer;
let gw: TestGateway;
const TASK_MS = 300;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: TASK_MS });
  gw = await startTestGateway(upstreamsFor([{ module: sora, sim }]));
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

/** A processing job whose polls are answered from the gateway's store (the vendor is not asked again). */
async function quietJob(key: string): Promise<{ id: string; jobId: string }> {
  const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'a fox' } });
  expect(r.status, r.text).toBe(200);
  const jobId = gw.services.video.deps.sealer.open(r.json.id)!.j;
  await gw.services.store.recordPoll(jobId, { vendorData: { held: 'back' }, progress: 10, nextPollAt: Date.now() + 3_600_000, now: Date.now() });
  gw.services.video.jobs.forget(jobId);
  return { id: r.json.id, jobId };
}

describe('poll answers', () => {
  it('answers the same JSON, with the same content type, poll after poll', async () => {
    const { key } = await gw.newKey();
    const { id } = await quietJob(key);
    const first = await call(gw, 'GET', `/v1/videos/${id}`, { key });
    const second = await call(gw, 'GET', `/v1/videos/${id}`, { key });
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(first.json).toMatchObject({ id, object: 'video', status: 'processing', model: 'sora-2', progress: 10, vendor_data: { held: 'back' } });
    expect(second.text).toBe(first.text);
  });

  it('shows a settlement on the very next poll', async () => {
    const { key } = await gw.newKey();
    const { id, jobId } = await quietJob(key);
    expect((await call(gw, 'GET', `/v1/videos/${id}`, { key })).json.status).toBe('processing');
    await new Promise((r) => setTimeout(r, TASK_MS + 100));
    // The refresher's path: the job is due, this instance refreshes it from the vendor.
    await gw.services.store.recordPoll(jobId, { vendorData: {}, progress: null, nextPollAt: 0, now: Date.now() });
    await gw.services.video.refresh((await gw.services.store.getJob(jobId))!);
    const done = await call(gw, 'GET', `/v1/videos/${id}`, { key });
    expect(done.json.status).toBe('completed');
    expect(done.json.output_url).toContain(`/v1/videos/${id}/content?expires=`);
  });

  it('never answers another account, however often the owner polls', async () => {
    const owner = await gw.newKey();
    const other = await gw.newKey();
    const { id } = await quietJob(owner.key);
    for (let i = 0; i < 3; i++) expect((await call(gw, 'GET', `/v1/videos/${id}`, { key: owner.key })).status).toBe(200);
    const r = await call(gw, 'GET', `/v1/videos/${id}`, { key: other.key });
    expect(r.status).toBe(404);
    expect(r.json.error.type).toBe('not_found');
    expect(r.text).not.toContain('held');
    expect((await call(gw, 'GET', `/v1/videos/${id}`, { key: owner.key })).status).toBe(200);
  });
});
