import { randomBytes } from 'node:crypto';
import OpenAI, { toFile } from 'openai';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4, samplePng } from '../../src/sim/media.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { videoModule as veo } from '../../src/video/vendors/veo/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startLocalS3, type LocalS3 } from '../helpers/s3.js';
import { upstreamsFor } from '../helpers/video.js';
import { PG_URL } from '../store/harness.js';

/**
 * Two gateway instances on one PostgreSQL, one Redis and one S3-compatible bucket (s3rver): an
 * uploaded image and an inline Veo video stored by one instance are served by the other, and each
 * job answers in its own dialect on the shared path.
 */
const schema = `gw_oai_${randomBytes(4).toString('hex')}`;
let sims: SimServer[];
let s3: LocalS3;
let a: TestGateway;
let b: TestGateway;

beforeAll(async () => {
  s3 = await startLocalS3();
  sims = [await veo.simulator.start({ taskMs: 300 }), await sora.simulator.start({ taskMs: 300 })];
  const cfg = upstreamsFor([{ module: veo, sim: sims[0]! }, { module: sora, sim: sims[1]! }]);
  // Without a storage_uri Veo answers with the video's bytes inline: the gateway keeps them in the blob store.
  delete (cfg.upstreams[0] as Record<string, unknown>).storage_uri;
  const shared = {
    ...cfg,
    database: `${PG_URL}?schema=${schema}`,
    limits: { backend: 'redis', redis_url: 'redis://127.0.0.1:6379' },
    video: { blobs: s3.config(`${schema}/`) },
  };
  a = await startTestGateway(shared);
  b = await startTestGateway(shared);
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await Promise.all((sims ?? []).map((s) => s.close()));
  await s3?.close();
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
});

const sdk = (gw: TestGateway, key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key });

describe('two instances on PostgreSQL, Redis and S3', () => {
  it('a Veo job with an uploaded image, created on one instance, is followed and downloaded through the other', async () => {
    const { key } = await a.newKey(100);
    sims[0]!.reset();
    const created = await sdk(a, key).videos.create({
      model: 'veo-3.1-generate-001',
      prompt: 'two instances',
      seconds: '4' as never,
      input_reference: await toFile(samplePng(), 'frame.png', { type: 'image/png' }),
    } as never);
    expect(created.status).toBe('queued');
    expect(sims[0]!.lastReceived('POST', /:predictLongRunning$/)!.json.instances[0].image.bytesBase64Encoded).toBe(samplePng().toString('base64'));

    const other = sdk(b, key);
    let video = await other.videos.retrieve(created.id);
    for (let i = 0; i < 100 && video.status !== 'completed' && video.status !== 'failed'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      video = await other.videos.retrieve(created.id);
    }
    expect(video.status).toBe('completed');
    const job = (await b.services.store.getJob(b.services.video.deps.sealer.open(created.id)!.j))!;
    // The video came inline; it lives in the bucket, not on either instance's disk.
    expect(job.outputs[0]).toMatchObject({ blob: expect.any(String) });
    expect(await b.services.video.deps.blobs.size(String(job.outputs[0]!.blob))).toBe(sampleMp4().length);
    expect(job.uploads).toHaveLength(1);
    const fromA = Buffer.from(await (await sdk(a, key).videos.downloadContent(created.id)).arrayBuffer());
    const fromB = Buffer.from(await (await other.videos.downloadContent(created.id)).arrayBuffer());
    expect(fromB.equals(sampleMp4())).toBe(true);
    expect(fromA.equals(fromB)).toBe(true);
    // The upload itself is served by the other instance too (one bucket, one signing secret).
    const link = b.services.video.deps.uploads.url(job.uploads[0]!, Date.now()).replace(b.url, b.url);
    const upload = await fetch(link);
    expect(Buffer.from(await upload.arrayBuffer()).equals(samplePng())).toBe(true);

    // Deleted on one instance: the other answers 404, and the bucket no longer holds its files.
    await sdk(a, key).videos.delete(created.id);
    // The other instance may serve its cached row for up to a second (documented), never longer.
    const deletedAt = Date.now();
    let status = (await call(b, 'GET', `/v1/videos/${created.id}`, { key })).status;
    while (status !== 404 && Date.now() - deletedAt < 1_500) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await call(b, 'GET', `/v1/videos/${created.id}`, { key })).status;
    }
    expect(status).toBe(404);
    expect(await b.services.video.deps.blobs.size(job.uploads[0]!)).toBeUndefined();
    expect(await b.services.video.deps.blobs.size(String(job.outputs[0]!.blob))).toBeUndefined();
  });

  it('a job answers on the shared path in the dialect it was created in, on either instance, in one list', async () => {
    const { key } = await a.newKey(100);
    const spec = await call(a, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'spec', seconds: 4 } });
    const oai = await call(a, 'POST', '/v1/videos', { key, body: { model: 'sora-2', prompt: 'openai', seconds: '4' } });
    expect(spec.json.status).toBe('processing');
    expect(oai.json.status).toBe('queued');
    const specRead = await call(b, 'GET', `/v1/videos/${spec.json.id}`, { key });
    const oaiRead = await call(b, 'GET', `/v1/videos/${oai.json.id}`, { key });
    expect(specRead.json).toMatchObject({ object: 'video', status: 'processing', seconds: 4 });
    expect(specRead.json).not.toHaveProperty('remixed_from_video_id');
    expect(oaiRead.json).toMatchObject({ object: 'video', seconds: '4', size: '720x1280', remixed_from_video_id: null });
    expect(['queued', 'in_progress']).toContain(oaiRead.json.status);
    const list = await call(b, 'GET', '/v1/videos', { key });
    expect(list.json).toMatchObject({ object: 'list', first_id: oai.json.id, last_id: spec.json.id, has_more: false });
    expect(list.json.data.map((v: { seconds: unknown }) => v.seconds)).toEqual(['4', 4]);
  });
});
