import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * The gateway restarted on the same database with other id secrets (`secret`, which seals video ids).
 * An id sealed under a secret that is gone answers the clean 404 of an unknown id, never a 500; and
 * finishing a rotation (`[old, new]`, then `[new]` once the old ids no longer matter) keeps every id
 * sealed under the new secret working.
 */
const OLD = 'rotation-old-secret-0123456789';
const NEW = 'rotation-new-secret-0123456789';
let sim: SimServer;
let dir: string;
let n = 0;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 20 });
  dir = mkdtempSync(join(tmpdir(), 'gw-secret-'));
});
afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

function start(secret: string | string[]): Promise<TestGateway> {
  const d = sora.simulator.demo(sim);
  return startTestGateway({
    database: `sqlite:${join(dir, `gateway-${n}.db`)}`,
    secret,
    upstreams: [{ ...d.options, name: 'sora-sim', vendor: 'sora', base_url: sim.url, api_key: d.apiKey, models: d.models.map((m) => m.name) }],
    models: Object.fromEntries(d.models.map((m) => [m.name, { capabilities: ['video'], price: { per_second: 0.1 } }])),
  });
}

/** A completed job made on a gateway with `secret`, which is then closed. */
async function jobUnder(secret: string | string[]): Promise<{ id: string; outputUrl: string; key: string; account: string }> {
  n++;
  const gw = await start(secret);
  try {
    const { key, account } = await gw.newKey(10);
    const model = sora.simulator.demo(sim).models[0]!.name;
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'sealed', seconds: 4 } });
    expect(created.status, created.text).toBe(200);
    let job: any;
    for (let i = 0; i < 100; i++) {
      job = (await call(gw, 'GET', `/v1/videos/${created.json.id}`, { key })).json;
      if (job.status !== 'processing') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(job.status).toBe('completed');
    return { id: job.id, outputUrl: new URL(job.output_url).pathname + new URL(job.output_url).search, key, account };
  } finally {
    await gw.close().catch(() => undefined);
  }
}

describe('restart with other id secrets', () => {
  it('an id sealed under a secret no longer configured answers 404 video_not_found, never a 500', async () => {
    const job = await jobUnder(OLD);
    const gw = await start(NEW);
    try {
      const got = await call(gw, 'GET', `/v1/videos/${job.id}`, { key: job.key });
      expect(got.status, got.text).toBe(404);
      expect(got.json.error).toMatchObject({ type: 'not_found', code: 'video_not_found' });
      const content = await call(gw, 'GET', `/v1/videos/${job.id}/content`, { key: job.key });
      expect(content.status, content.text).toBe(404);
      expect(content.json.error.type).toBe('not_found');
      const deleted = await call(gw, 'DELETE', `/v1/videos/${job.id}`, { key: job.key });
      expect(deleted.status, deleted.text).toBe(404);
      // The signed link was signed with the old secret too: a refusal in the error shape, not a 500.
      const link = await call(gw, 'GET', job.outputUrl);
      expect([401, 404], link.text).toContain(link.status);
      expect(link.json.error.type).toMatch(/authentication_error|not_found/);
    } finally {
      await gw.close();
    }
  }, 30_000);

  it('a rotation finished by dropping the old secret keeps the ids sealed under the new one', async () => {
    const job = await jobUnder([OLD, NEW]);
    const gw = await start([NEW]);
    try {
      const got = await call(gw, 'GET', `/v1/videos/${job.id}`, { key: job.key });
      expect(got.status, got.text).toBe(200);
      expect(got.json).toMatchObject({ id: job.id, status: 'completed' });
      expect((await call(gw, 'GET', `/v1/videos/${job.id}/content`, { key: job.key })).status).toBe(200);
      expect((await call(gw, 'GET', job.outputUrl)).status).toBe(200);
    } finally {
      await gw.close();
    }
  }, 30_000);
});
