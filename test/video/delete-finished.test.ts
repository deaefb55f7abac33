import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as azureSora } from '../../src/video/vendors/azure-sora/index.js';
import { videoModule as seedance } from '../../src/video/vendors/seedance/index.js';
import type { VideoVendorModule } from '../../src/video/vendors/module.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * Ark's and Azure's DELETE of a task also removes a task that has already finished, with a 2xx. A
 * client that learnt of the finished video elsewhere (its own `callback_url` reaches Ark unchanged)
 * and deletes the job before the gateway's next poll must be billed for it, as the vendor billed the
 * operator: the delete reads the task first and cancels only one still running.
 */
const sims: SimServer[] = [];
let gw: TestGateway;
const modules: VideoVendorModule[] = [seedance, azureSora];

beforeAll(async () => {
  for (const m of modules) sims.push(await m.simulator.start({ taskMs: 60 }));
  const cfg = upstreamsFor(modules.map((module, i) => ({ module, sim: sims[i]! })));
  // The gateway would not poll these jobs for ten minutes on its own.
  gw = await startTestGateway({ ...cfg, video: { poll_interval_ms: 600_000 } });
});
afterAll(async () => {
  await gw?.close();
  for (const s of sims) await s.close();
});

describe('DELETE of a job whose task finished since the last poll', () => {
  for (const [i, module] of modules.entries()) {
    it(`${module.vendor.id}: the finished video is billed, not cancelled; a running one is still cancelled for free`, async () => {
      const model = module.simulator.demo(sims[i]!).models[0]!.name;
      const { key, account } = await gw.newKey(100);
      const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'a cat', seconds: 5 } });
      expect(created.status, created.text).toBe(200);
      const held = await gw.balance(account);
      expect(held).toBeLessThan(100_000_000);
      // The vendor finishes; the gateway has not polled since the create.
      await new Promise((r) => setTimeout(r, 400));
      const del = await call(gw, 'DELETE', `/v1/videos/${created.json.id}`, { key });
      expect(del.status, del.text).toBe(200);
      expect(del.json).toMatchObject({ deleted: true });
      const jobId = gw.services.video.deps.sealer.open(created.json.id)!.j;
      const job = await gw.services.store.getJob(jobId);
      expect(job).toMatchObject({ state: 'completed' });
      expect(job!.costMicros).toBeGreaterThan(0);
      expect(await gw.balance(account)).toBe(100_000_000 - job!.costMicros!);
      expect(sims[i]!.received('DELETE', /./)).toHaveLength(0);

      // A task that still runs when deleted is cancelled and costs nothing.
      sims[i]!.settings.taskMs = 60_000;
      const running = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'a dog', seconds: 5 } });
      expect(running.status, running.text).toBe(200);
      const before = await gw.balance(account);
      const del2 = await call(gw, 'DELETE', `/v1/videos/${running.json.id}`, { key });
      expect(del2.status).toBe(200);
      const cancelled = await gw.services.store.getJob(gw.services.video.deps.sealer.open(running.json.id)!.j);
      expect(cancelled).toMatchObject({ state: 'failed', costMicros: null });
      // The vendor was asked for the task, then sent its cancel call: one, for the running task only.
      expect(sims[i]!.received('DELETE', /./)).toHaveLength(1);
      expect(await gw.balance(account)).toBeGreaterThan(before);
      sims[i]!.settings.taskMs = 60;
    });
  }
});
