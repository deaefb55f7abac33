import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as seedance } from '../../src/video/vendors/seedance/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';
import { ensureRedis, REDIS_URL } from '../limits/redis-helper.js';

/**
 * The vendor-callback limit per job is shared by every instance when the limiter is Redis: a flood
 * of callbacks spread over two instances refreshes the job no more often than one instance may.
 * With per-process limits each instance spends its own allowance; with Redis away each instance
 * falls back to its local windows and callbacks keep working.
 */
const PER_MINUTE = 2;
let sim: SimServer;
let dir: string;

beforeAll(async () => {
  await ensureRedis();
  sim = await seedance.simulator.start({ taskMs: 120_000 });
  dir = mkdtempSync(join(tmpdir(), 'gw-callback-limit-'));
});
afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function pair(name: string, limits: Record<string, unknown>): Promise<[TestGateway, TestGateway]> {
  const cfg = {
    ...upstreamsFor([{ module: seedance, sim }]),
    database: `sqlite:${join(dir, `${name}.db`)}`,
    limits,
    server: { public_url: 'http://127.0.0.1:1' },
    video: { poll_interval_ms: 600_000, refresher_interval_ms: 0, callback_refreshes_per_minute: PER_MINUTE, media: { allow_private_networks: true } },
  };
  return [await startTestGateway(cfg), await startTestGateway(cfg)];
}

/** Creates a long job on `a`, then calls it back on both instances for ~2.5 s; returns the vendor polls it caused. */
async function flood(a: TestGateway, b: TestGateway): Promise<number> {
  const { key } = await a.newKey(100);
  const created = await call(a, 'POST', '/v1/videos/generations', { key, body: { model: seedance.simulator.demo(sim).models[0]!.name, prompt: 'flood' } });
  expect(created.status, created.text).toBe(200);
  const job = (await a.services.store.getJob(a.services.video.deps.sealer.open(created.json.id)!.j))!;
  const polls = () => sim.requests.filter((r) => r.method === 'GET' && r.path.endsWith(`/${job.taskId}`)).length;
  for (let i = 0; i < 25; i++) {
    const r = await call(i % 2 ? b : a, 'POST', `/callbacks/video/${job.callbackToken}`, { body: {} });
    expect(r.status).toBe(200);
    await new Promise((res) => setTimeout(res, 100));
  }
  // Trailing refreshes armed in the last window run at its end.
  await new Promise((res) => setTimeout(res, 1_500));
  return polls();
}

describe('vendor callback limit across instances', () => {
  it('with Redis, two instances together refresh a flooded job at most callback_refreshes_per_minute times', async () => {
    const [a, b] = await pair('redis', { backend: 'redis', redis_url: REDIS_URL });
    try {
      expect(await flood(a, b)).toBe(PER_MINUTE);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('with per-process limits, each instance spends its own allowance (what sharing prevents)', async () => {
    const [a, b] = await pair('memory', { backend: 'memory' });
    try {
      expect(await flood(a, b)).toBe(2 * PER_MINUTE);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('with Redis unreachable, callbacks still refresh the job, within each instance’s local limit', async () => {
    const [a, b] = await pair('redis-down', { backend: 'redis', redis_url: 'redis://127.0.0.1:1' });
    try {
      const polls = await flood(a, b);
      expect(polls).toBeGreaterThanOrEqual(1);
      expect(polls).toBeLessThanOrEqual(2 * PER_MINUTE);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
