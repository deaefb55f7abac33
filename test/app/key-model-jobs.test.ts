import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createVideo, download, pollUntilDone, upstreamsFor } from '../helpers/video.js';

let sim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 100 });
  gw = await startTestGateway(upstreamsFor([{ module: sora, sim, name: 'sora-a' }]));
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

/**
 * A key limited to some models reads only its account's jobs of those models: another key of the
 * same account may have made a job of a model this one may not use, and that job's prompt, outputs
 * and cancellation are not this key's.
 */
describe('a key limited to some models and the jobs of its account', () => {
  it('lists, reads, downloads, deletes and remixes only the jobs of its models', async () => {
    const { key: full, account } = await gw.newKey(100);
    const scoped = await gw.createKey(account, { models: ['sora-2'] });
    const mine = (await createVideo(gw, full, { model: 'sora-2', prompt: 'a fox', seconds: 4 })).created.json.id as string;
    const other = (await createVideo(gw, full, { model: 'sora-2-pro', prompt: 'a secret plan', seconds: 4 })).created.json.id as string;
    await pollUntilDone(gw, full, mine);
    const done = await pollUntilDone(gw, full, other);
    expect(done.status).toBe('completed');

    const listed = await call(gw, 'GET', '/v1/videos', { key: scoped });
    expect(listed.status).toBe(200);
    expect(listed.json.data.map((j: { id: string }) => j.id)).toEqual([mine]);
    expect(JSON.stringify(listed.json)).not.toContain('secret plan');
    const all = await call(gw, 'GET', '/v1/videos', { key: full });
    expect(all.json.data.map((j: { id: string }) => j.id).sort()).toEqual([mine, other].sort());

    // Every read of the other model's job is the same 404 as an id of another account.
    for (const [method, path] of [
      ['GET', `/v1/videos/${other}`],
      ['GET', `/v1/videos/${other}/content`],
      ['DELETE', `/v1/videos/${other}`],
    ] as const) {
      const r = await call(gw, method, path, { key: scoped });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.json.error.type).toBe('not_found');
    }
    const remix = await call(gw, 'POST', `/v1/videos/${other}/remix`, { key: scoped, body: { prompt: 'the plan, again' } });
    expect(remix.status).toBe(404);
    const cursor = await call(gw, 'GET', `/v1/videos?after=${other}`, { key: scoped });
    expect(cursor.status).toBe(400);
    expect(cursor.json.error.code).toBe('invalid_cursor');

    // Its own job reads as before, and the refused DELETE left the other job in place.
    expect((await call(gw, 'GET', `/v1/videos/${mine}`, { key: scoped })).status).toBe(200);
    expect((await call(gw, 'GET', `/v1/videos/${mine}/content`, { key: scoped })).status).toBe(200);
    expect((await call(gw, 'GET', `/v1/videos/${other}`, { key: full })).json.status).toBe('completed');

    // The signed output_url a full read handed out still downloads without a key.
    const link = await download(done.output_url);
    expect(link.status).toBe(200);
    expect(link.bytes.length).toBeGreaterThan(0);
  });
});

describe('a key’s model patterns at creation', () => {
  it('are 1-100 non-empty patterns of at most 200 characters (each one a filter of the key’s job list)', async () => {
    const { account } = await gw.newKey(1);
    const admin = { authorization: `Bearer ${gw.adminToken}` };
    const make = (models: unknown) => call(gw, 'POST', '/admin/keys', { headers: admin, body: { account, models } });
    for (const models of [[], [''], ['x'.repeat(201)], Array.from({ length: 101 }, (_, i) => `m-${i}`)]) {
      const r = await make(models);
      expect(r.status, JSON.stringify(models).slice(0, 40)).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error' });
      expect(r.json.error.param).toMatch(/^models/);
    }
    const ok = await make(Array.from({ length: 100 }, (_, i) => `m-${i}`));
    expect(ok.status).toBe(201);
    // A hundred patterns list in one statement, as one does.
    expect((await call(gw, 'GET', '/v1/videos', { key: ok.json.key })).json.data).toEqual([]);
  });
});
