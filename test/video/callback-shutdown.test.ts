import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as seedance } from '../../src/video/vendors/seedance/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';
import { until } from '../spend/receiver.js';

/**
 * Vendor callbacks that reach an instance while it shuts down: refused cleanly (503 shutting_down,
 * Retry-After, nothing triggered, no crash), and the job settles later by polling on another
 * instance, charged once.
 */
const TASK_MS = 600;
let sim: SimServer;
let dir: string;
let a: TestGateway;
let b: TestGateway;

beforeAll(async () => {
  sim = await seedance.simulator.start({ taskMs: TASK_MS });
  dir = mkdtempSync(join(tmpdir(), 'gw-callback-shutdown-'));
  const cfg = {
    ...upstreamsFor([{ module: seedance, sim }]),
    database: `sqlite:${join(dir, 'shared.db')}`,
    server: { public_url: 'http://127.0.0.1:1' },
    video: { poll_interval_ms: 200, refresher_interval_ms: 0, media: { allow_private_networks: true } },
  };
  a = await startTestGateway(cfg);
  b = await startTestGateway(cfg);
});
afterAll(async () => {
  await a?.close().catch(() => undefined);
  await b?.close();
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('vendor callbacks during shutdown', () => {
  it('are refused with 503 shutting_down while draining, and the job settles by polling elsewhere, charged once', async () => {
    const { key, account } = await a.newKey(100);
    const created = await call(a, 'POST', '/v1/videos/generations', { key, body: { model: seedance.simulator.demo(sim).models[0]!.name, prompt: 'draining' } });
    expect(created.status, created.text).toBe(200);
    const job = (await a.services.store.getJob(a.services.video.deps.sealer.open(created.json.id)!.j))!;
    const polls = () => sim.requests.filter((r) => r.method === 'GET' && r.path.endsWith(`/${job.taskId}`)).length;

    // The drain begins: readiness flips, and callbacks (on connections still open) are refused.
    a.services.shutdown.begin();
    const refused = await call(a, 'POST', `/callbacks/video/${job.callbackToken}`, { body: {} });
    expect(refused.status).toBe(503);
    expect(refused.json.error).toMatchObject({ type: 'server_error', code: 'shutting_down' });
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(refused.text).not.toMatch(/at .*\.ts/);
    // The simulator's own callbacks (with its retries) land on the draining instance too.
    await new Promise((r) => setTimeout(r, TASK_MS + 800));
    expect(polls()).toBe(0);
    expect((await a.services.store.getJob(job.id))!.state).toBe('processing');
    await a.close();

    // Another instance settles it at its poll.
    const done = await pollUntilDone(b, key, created.json.id);
    expect(done.status).toBe('completed');
    const accountId = (await b.services.store.getAccountByName(account))!.id;
    const captures = (await b.services.store.listLedger(accountId)).filter((e) => e.kind === 'capture');
    expect(captures).toHaveLength(1);
  });

  it('a refresh a callback started just before the shutdown finishes before the store closes', async () => {
    const gw = await startTestGateway({
      ...upstreamsFor([{ module: seedance, sim }]),
      server: { public_url: 'http://127.0.0.1:1' },
      video: { poll_interval_ms: 600_000, refresher_interval_ms: 0, media: { allow_private_networks: true } },
    });
    sim.settings.taskMs = 60_000;
    try {
      const { key } = await gw.newKey(100);
      const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: seedance.simulator.demo(sim).models[0]!.name, prompt: 'mid-refresh' } });
      expect(created.status, created.text).toBe(200);
      const job = (await gw.services.store.getJob(gw.services.video.deps.sealer.open(created.json.id)!.j))!;
      const before = sim.requests.length;
      expect((await call(gw, 'POST', `/callbacks/video/${job.callbackToken}`, { body: {} })).status).toBe(200);
      // A second one arms a trailing refresh, which the shutdown drops.
      expect((await call(gw, 'POST', `/callbacks/video/${job.callbackToken}`, { body: {} })).status).toBe(200);
      await gw.close();
      await until(() => sim.requests.length > before, 2_000);
      await new Promise((r) => setTimeout(r, 1_200));
      expect(sim.requests.filter((r) => r.method === 'GET' && r.path.endsWith(`/${job.taskId}`))).toHaveLength(1);
    } finally {
      sim.settings.taskMs = TASK_MS;
    }
  });
});
