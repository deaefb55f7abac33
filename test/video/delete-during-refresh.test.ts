import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as azureSora } from '../../src/video/vendors/azure-sora/index.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * A DELETE that lands while a GET is refreshing the job from its vendor: the vendor's poll answer is
 * held open, the DELETE is acknowledged, then the poll is let go. The GET that was waiting, and every
 * GET after it, must answer 404 (not the job's new status); the row stays deleted; the hold is settled
 * exactly once. Sora has no cancel call, so its job still completes (and is billed, as the vendor made
 * the video). Azure cancels upstream, and its DELETE would also remove a task that finished during that
 * poll, so there the delete waits for the poll to end, then asks the vendor and cancels a task still running.
 * The gateway's poll interval is 0 in tests, so every GET of a processing job refreshes it.
 */
let soraSim: SimServer;
let azureSim: SimServer;
let gw: TestGateway;

const SORA_POLL = /^\/v1\/videos\/[^/]+$/;
const AZURE_JOB = /\/video\/generations\/jobs\/[^/]+$/;

beforeAll(async () => {
  soraSim = await sora.simulator.start({ taskMs: 20 });
  azureSim = await azureSora.simulator.start({ taskMs: 60_000 });
  gw = await startTestGateway(upstreamsFor([{ module: sora, sim: soraSim }, { module: azureSora, sim: azureSim }]));
});
afterAll(async () => {
  await gw?.close();
  await soraSim?.close();
  await azureSim?.close();
});

async function until(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Starts a GET whose vendor poll is held open; resolves once the vendor has received that poll. */
async function getHeldInPoll(sim: SimServer, pollPath: RegExp, key: string, id: string) {
  let release!: () => void;
  sim.inject({ kind: 'hold', until: new Promise<void>((r) => (release = r)) }, 1, pollPath);
  const polled = sim.received('GET', pollPath).length;
  const pending = call(gw, 'GET', `/v1/videos/${id}`, { key });
  await until('the vendor poll', () => sim.received('GET', pollPath).length > polled);
  return { pending, release };
}

async function ledgerOf(account: string) {
  const id = (await gw.services.store.getAccountByName(account))!.id;
  const rows = await gw.services.store.listLedger(id);
  const count = (kind: string) => rows.filter((e) => e.kind === kind).length;
  return { holds: count('hold'), releases: count('release'), captures: count('capture') };
}

async function expectGone(key: string, id: string, answer: { status: number; json: any }) {
  expect(answer.status, JSON.stringify(answer.json)).toBe(404);
  expect(answer.json.error.code).toBe('video_not_found');
  const again = await call(gw, 'GET', `/v1/videos/${id}`, { key });
  expect(again.status).toBe(404);
  const list = await call(gw, 'GET', '/v1/videos', { key });
  expect(list.json.data.map((v: { id: string }) => v.id)).not.toContain(id);
}

describe('a DELETE while a GET refreshes the job', () => {
  it('Sora (no cancel call): the waiting GET answers 404, the job completes deleted and is billed once', async () => {
    const { key, account } = await gw.newKey(10);
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'a fox', seconds: 4 } });
    expect(created.status, created.text).toBe(200);
    const id = created.json.id as string;
    const jobId = gw.services.video.deps.sealer.open(id)!.j;
    await new Promise((r) => setTimeout(r, 60)); // the vendor's task is done: the held poll will say completed

    const { pending, release } = await getHeldInPoll(soraSim, SORA_POLL, key, id);
    const del = await call(gw, 'DELETE', `/v1/videos/${id}`, { key });
    expect(del.status, del.text).toBe(200);
    expect(del.json).toMatchObject({ deleted: true });
    release();
    await expectGone(key, id, await pending);

    const row = (await gw.services.store.getJob(jobId))!;
    expect(row.deletedAt).not.toBeNull(); // the refresh's write did not bring it back
    expect(row.state).toBe('completed');
    expect(await ledgerOf(account)).toEqual({ holds: 1, releases: 1, captures: 1 });
    expect(await gw.balance(account)).toBe(10_000_000 - 400_000);
  });

  it('Azure (cancelled upstream): the DELETE waits for that poll to end, then cancels; the hold is released exactly once', async () => {
    const { key, account } = await gw.newKey(10);
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora', prompt: 'a fox', seconds: 5 } });
    expect(created.status, created.text).toBe(200);
    const id = created.json.id as string;
    const jobId = gw.services.video.deps.sealer.open(id)!.j;

    const { pending, release } = await getHeldInPoll(azureSim, AZURE_JOB, key, id);
    const deleting = call(gw, 'DELETE', `/v1/videos/${id}`, { key });
    // Azure's DELETE would also remove a task that finished during that poll: nothing is cancelled yet.
    await new Promise((r) => setTimeout(r, 150));
    expect(azureSim.received('DELETE', AZURE_JOB)).toHaveLength(0);
    release();
    // The GET's poll ended before the delete was acknowledged: it answers what it learnt.
    const polled = await pending;
    expect(polled.status, polled.text).toBe(200);
    expect(polled.json.status).toBe('processing');
    const del = await deleting;
    expect(del.status, del.text).toBe(200);
    expect(azureSim.received('DELETE', AZURE_JOB)).toHaveLength(1);
    expect((await call(gw, 'GET', `/v1/videos/${id}`, { key })).status).toBe(404);

    const row = (await gw.services.store.getJob(jobId))!;
    expect(row.deletedAt).not.toBeNull();
    expect([row.state, row.errorCode]).toEqual(['failed', 'cancelled']);
    expect(await ledgerOf(account)).toEqual({ holds: 1, releases: 1, captures: 0 });
    expect(await gw.balance(account)).toBe(10_000_000);
  });
});
