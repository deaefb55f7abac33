import OpenAI, { NotFoundError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as azure } from '../../src/video/vendors/azure-sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/** Deleting a processing Azure Sora job cancels it with Azure's DELETE /jobs/{id}; the hold is released once. */
let gw: TestGateway;
let sim: SimServer;

beforeAll(async () => {
  sim = await azure.simulator.start({ taskMs: 60_000 });
  gw = await startTestGateway(upstreamsFor([{ module: azure, sim }]));
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

const client = (key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key });
const HELD = 5 * 100_000; // 5 s (Azure's default) at 0.1 per second, in micro-units

describe('Azure Sora cancel', () => {
  it('declares cancel in the model capabilities', async () => {
    const { key } = await gw.newKey(100);
    const r = await call(gw, 'GET', '/v1/models/sora', { key });
    expect(r.json.video).toMatchObject({ cancel: true, remix: false });
  });

  it('a processing job is cancelled upstream on its api-version, the hold released once, the job gone', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    sim.reset();
    const v = await c.videos.create({ model: 'sora', prompt: 'a heron', size: '1280x720' });
    expect(await gw.balance(account)).toBe(100_000_000 - HELD);
    const taskId = ((await c.videos.retrieve(v.id)) as unknown as { vendor_data: { id: string } }).vendor_data.id;
    expect(taskId).toMatch(/^task_/);

    expect(await c.videos.delete(v.id)).toEqual({ id: v.id, object: 'video.deleted', deleted: true });
    const deletes = sim.received('DELETE', /\/openai\/v1\/video\/generations\/jobs\/task_/);
    expect(deletes).toHaveLength(1);
    expect(deletes[0]!.path.endsWith(`/jobs/${taskId}`)).toBe(true);
    expect([deletes[0]!.headers['api-key'], deletes[0]!.query.get('api-version')]).toEqual(['sim-key', 'preview']);
    expect(await gw.balance(account)).toBe(100_000_000);

    // Azure now reports the job cancelled.
    const upstream = await fetch(`${sim.url}/openai/v1/video/generations/jobs/${taskId}?api-version=preview`, { headers: { 'api-key': 'sim-key' } });
    expect((await upstream.json()).status).toBe('cancelled');

    // Reads, a second delete and the refresher find nothing more to release.
    await expect(c.videos.retrieve(v.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(c.videos.delete(v.id)).rejects.toBeInstanceOf(NotFoundError);
    await gw.services.poller.tick();
    expect(await gw.balance(account)).toBe(100_000_000);
    expect(sim.received('DELETE', /\/jobs\//)).toHaveLength(1);
  });

  it('the same on the spec surface (DELETE /v1/videos/{id} of a generations job)', async () => {
    const { key, account } = await gw.newKey(100);
    sim.reset();
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora', prompt: 'a heron', seconds: 4 } });
    expect(r.status).toBe(200);
    expect(await gw.balance(account)).toBe(100_000_000 - 400_000);
    const d = await call(gw, 'DELETE', `/v1/videos/${r.json.id}`, { key });
    expect(d.status).toBe(200);
    expect(sim.received('DELETE', /\/jobs\//)).toHaveLength(1);
    expect(await gw.balance(account)).toBe(100_000_000);
  });

  it('when Azure refuses the cancel, the hold stays until the vendor settles the job', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    sim.reset();
    const v = await c.videos.create({ model: 'sora', prompt: 'a heron', size: '1280x720' });
    sim.inject({ kind: 'status', status: 500, json: { error: { code: 'InternalServerError', message: 'try later' } } }, 1, /\/jobs\/task_/, 'DELETE');
    await c.videos.delete(v.id);
    expect(sim.received('DELETE', /\/jobs\//)).toHaveLength(1);
    expect(await gw.balance(account)).toBe(100_000_000 - HELD);
    await expect(c.videos.retrieve(v.id)).rejects.toBeInstanceOf(NotFoundError);
  });
});
