import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI, { BadRequestError, toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4, samplePng } from '../../src/sim/media.js';
import { readBody } from '../../src/sim/openai-videos.js';
import { videoModule as azure } from '../../src/video/vendors/azure-sora/index.js';
import { videoModule as fal } from '../../src/video/vendors/fal/index.js';
import { videoModule as seedance } from '../../src/video/vendors/seedance/index.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { videoModule as veo } from '../../src/video/vendors/veo/index.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { PRICE_PER_SECOND, upstreamsFor } from '../helpers/video.js';

/**
 * An uploaded video as the OpenAI create's `input_reference`, through the official SDK: each vendor
 * that takes a video gets it in its own form (checked by its simulator over HTTP), the others
 * refuse it with 400 before anything is held or sent.
 */
let gw: TestGateway;
let sims: Record<'veo' | 'azure' | 'wan' | 'seedance' | 'sora' | 'fal', SimServer>;

beforeAll(async () => {
  sims = {
    veo: await veo.simulator.start({ taskMs: 300 }),
    azure: await azure.simulator.start({ taskMs: 300 }),
    wan: await wan.simulator.start({ taskMs: 300 }),
    seedance: await seedance.simulator.start({ taskMs: 300 }),
    sora: await sora.simulator.start({ taskMs: 300 }),
    fal: await fal.simulator.start({ taskMs: 300 }),
  };
  // Like the vendors, these two download the reference video from the link they are given.
  sims.wan.settings.fetchReferenceMedia = true;
  sims.seedance.settings.fetchReferenceMedia = true;
  const cfg = upstreamsFor(Object.entries(sims).map(([name, sim]) => ({ module: { veo, azure, wan, seedance, sora, fal }[name as keyof typeof sims], sim })));
  // wan's reference-to-video model (media protocol: input.media items), beside the demo's models.
  (cfg.upstreams.find((u) => u.vendor === 'wan')!.models as string[]).push('wan2.7-r2v');
  cfg.models['wan2.7-r2v'] = { capabilities: ['video'], price: { per_second: PRICE_PER_SECOND } };
  gw = await startTestGateway({ ...cfg, video: { uploads: { max_video_seconds: 10 } } });
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(Object.values(sims ?? {}).map((s) => s.close()));
});

const client = (key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key });
const mp4 = () => toFile(sampleMp4(), 'clip.mp4', { type: 'video/mp4' });
const uploadsLeft = () => {
  const dir = join(gw.dataDir, 'videos', 'uploads');
  return existsSync(dir) ? readdirSync(dir, { recursive: true }).filter((f) => String(f).includes('.')) : [];
};

async function created(model: string, extra: Record<string, unknown> = {}) {
  const { key } = await gw.newKey(100);
  const v = await client(key).videos.create({ model, prompt: 'continue this shot', input_reference: await mp4(), ...extra } as never);
  expect(v.status).toBe('queued');
  return v;
}

async function fetchBytes(url: string): Promise<{ status: number; type: string | null; bytes: Buffer }> {
  const res = await fetch(url);
  return { status: res.status, type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) };
}

describe('a video input_reference, per vendor', () => {
  it('Veo 3.1 gets it inline as instances[].video (extension), base64 of the uploaded bytes', async () => {
    sims.veo.reset();
    await created('veo-3.1-generate-001');
    const inst = sims.veo.lastReceived('POST', /:predictLongRunning$/)!.json.instances[0];
    expect(inst.video).toEqual({ bytesBase64Encoded: sampleMp4().toString('base64'), mimeType: 'video/mp4' });
    expect(inst.image).toBeUndefined();
  });

  it('Azure Sora gets it as a multipart file named by a video inpaint item', async () => {
    sims.azure.reset();
    await created('sora', { size: '1280x720' });
    const body = (await readBody(sims.azure.lastReceived('POST', /\/jobs$/)!))!;
    expect(body.multipart).toBe(true);
    const items = JSON.parse(body.fields.inpaint_items);
    expect(items).toEqual([{ frame_index: 0, type: 'video', file_name: 'source_video.mp4', crop_bounds: { left_fraction: 0, top_fraction: 0, right_fraction: 1, bottom_fraction: 1 } }]);
    const file = body.files.find((f) => f.filename === 'source_video.mp4')!;
    expect(file.type).toBe('video/mp4');
    expect(file.data.equals(sampleMp4())).toBe(true);
  });

  it('wan r2v gets a signed gateway link as a reference_video, which the simulator downloads', async () => {
    sims.wan.reset();
    await created('wan2.7-r2v');
    const media = sims.wan.lastReceived('POST', /video-synthesis$/)!.json.input.media;
    expect(media).toEqual([{ type: 'reference_video', url: expect.stringMatching(new RegExp(`^${gw.url}/uploads/.+\\.mp4\\?`)) }]);
    const got = await fetchBytes(media[0].url);
    expect([got.status, got.type]).toEqual([200, 'video/mp4']);
    expect(got.bytes.equals(sampleMp4())).toBe(true);
  });

  it('Seedance 2.0 gets a video_url content item with the signed link', async () => {
    sims.seedance.reset();
    await created('doubao-seedance-2-0-260128');
    const content = sims.seedance.lastReceived('POST', /contents\/generations\/tasks$/)!.json.content;
    const video = content.find((c: { type: string }) => c.type === 'video_url');
    expect(video).toEqual({ type: 'video_url', video_url: { url: expect.stringContaining(`${gw.url}/uploads/`) }, role: 'reference_video' });
    expect((await fetchBytes(video.video_url.url)).bytes.equals(sampleMp4())).toBe(true);
  });

  it('the simulators refuse a reference link that does not serve a video', async () => {
    const res = await fetch(`${sims.wan.url}/api/v1/services/aigc/video-generation/video-synthesis`, {
      method: 'POST',
      headers: { authorization: 'Bearer sim-key', 'x-dashscope-async': 'enable', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'wan2.7-r2v', input: { prompt: 'x', media: [{ type: 'reference_video', url: `${gw.url}/uploads/nobody/none.mp4` }] } }),
    });
    expect(res.status).toBe(400);
    expect((await res.json()).code).toBe('InvalidParameter.DataInspection');
  });

  it.each([
    ['sora-2', 'sora'],
    ['fal-ai/veo3/fast', 'fal'],
    ['wan2.6-i2v', 'wan'],
    ['doubao-seedance-1-5-pro-251215', 'seedance'],
  ] as const)('%s takes no video: 400 unsupported_input_reference, nothing held, sent or kept', async (model, vendor) => {
    const { key, account } = await gw.newKey(100);
    const before = uploadsLeft().length;
    sims[vendor].reset();
    const err = await client(key).videos.create({ model, prompt: 'x', input_reference: await mp4() } as never).catch((e) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err.error).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_input_reference', param: 'input_reference' });
    expect(await gw.balance(account)).toBe(100_000_000);
    expect(sims[vendor].received('POST', /./)).toHaveLength(0);
    expect(uploadsLeft().length).toBe(before);
  });
});

describe('a video input_reference is checked from its bytes', () => {
  it('a file that claims to be MP4 but is not a playable one is 400 invalid_media', async () => {
    const { key } = await gw.newKey(100);
    const fake = Buffer.concat([Buffer.from([0, 0, 0, 24]), Buffer.from('ftypisom'), Buffer.alloc(64, 7)]);
    const err = await client(key).videos.create({ model: 'veo-3.1-generate-001', prompt: 'x', input_reference: await toFile(fake, 'x.mp4', { type: 'video/mp4' }) } as never).catch((e) => e);
    expect(err.error).toMatchObject({ code: 'invalid_media', param: 'input_reference' });
  });

  it('text declared as video/mp4 is 400 unsupported_media_type (the declared type does not count)', async () => {
    const { key } = await gw.newKey(100);
    const err = await client(key).videos.create({ model: 'veo-3.1-generate-001', prompt: 'x', input_reference: await toFile(Buffer.from('hello'), 'x.mp4', { type: 'video/mp4' }) } as never).catch((e) => e);
    expect(err.error).toMatchObject({ code: 'unsupported_media_type', param: 'input_reference' });
  });

  it('a video longer than max_video_seconds is refused before anything is sent', async () => {
    const short = await startTestGateway({ ...upstreamsFor([{ module: veo, sim: sims.veo }]), video: { uploads: { max_video_seconds: 1 } } });
    try {
      const { key } = await short.newKey(100);
      sims.veo.reset();
      const c = new OpenAI({ baseURL: `${short.url}/v1`, apiKey: key });
      const err = await c.videos.create({ model: 'veo-3.1-generate-001', prompt: 'x', input_reference: await mp4() } as never).catch((e) => e);
      expect(err.error).toMatchObject({ code: 'invalid_media', param: 'input_reference' });
      expect(err.error.message).toContain('2.0 s');
      expect(sims.veo.received('POST', /./)).toHaveLength(0);
    } finally {
      await short.close();
    }
  });

  it('a video over max_video_bytes is 413 upload_too_large; an image still has its own, smaller limit', async () => {
    const small = await startTestGateway({
      ...upstreamsFor([{ module: veo, sim: sims.veo }]),
      video: { uploads: { max_video_bytes: 1000, max_bytes: samplePng().length - 1 } },
    });
    try {
      const { key } = await small.newKey(100);
      const c = new OpenAI({ baseURL: `${small.url}/v1`, apiKey: key });
      const big = await c.videos.create({ model: 'veo-3.1-generate-001', prompt: 'x', input_reference: await mp4() } as never).catch((e) => e);
      expect([big.status, big.error.code]).toEqual([413, 'upload_too_large']);
      const png = await c.videos.create({ model: 'veo-3.1-generate-001', prompt: 'x', input_reference: await toFile(samplePng(), 'f.png') } as never).catch((e) => e);
      expect([png.status, png.error.code]).toEqual([413, 'upload_too_large']);
    } finally {
      await small.close();
    }
  });
});
