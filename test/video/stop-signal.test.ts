import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * Every vendor poll carries the one signal shutdown aborts (VideoService.stopRefreshes). A refresher
 * pass polls up to 25 jobs at once, client GETs more: that many listeners on one signal is the
 * design, not a leak, and must not print Node's "possible EventTarget memory leak" warning.
 */
let sim: SimServer;
let gw: TestGateway;
const warnings: Error[] = [];
const onWarning = (w: Error) => void warnings.push(w);

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 600_000 });
  gw = await startTestGateway(upstreamsFor([{ module: sora, sim }]));
  process.on('warning', onWarning);
});
afterAll(async () => {
  process.off('warning', onWarning);
  await gw?.close();
  await sim?.close();
});

describe('polls in flight side by side', () => {
  it('share the shutdown signal without a max-listeners warning', async () => {
    const { key } = await gw.newKey(100);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: `job ${i}`, seconds: 4 } });
      expect(r.status, r.text).toBe(200);
      ids.push(gw.services.video.deps.sealer.open(r.json.id)!.j);
    }
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const poll = /^\/v1\/videos\/[^/]+$/;
    const before = sim.received('GET', poll).length;
    sim.inject({ kind: 'hold', until: held }, ids.length, poll);
    const jobs = await Promise.all(ids.map(async (id) => (await gw.services.store.getJob(id))!));
    const refreshes = Promise.all(jobs.map((job) => gw.services.video.refresh(job)));
    // Every poll reaches the vendor before any is answered: all of them are in flight at once.
    for (let i = 0; i < 500 && sim.received('GET', poll).length < before + ids.length; i++) await new Promise((r) => setTimeout(r, 10));
    expect(sim.received('GET', poll).length).toBe(before + ids.length);
    release();
    await refreshes;
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message)).toEqual([]);
  });
});
