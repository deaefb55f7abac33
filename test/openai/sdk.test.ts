import OpenAI, { NotFoundError, BadRequestError, toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4, samplePng } from '../../src/sim/media.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { videoModule as veo } from '../../src/video/vendors/veo/index.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * The official `openai` SDK (v6), unchanged but for baseURL and apiKey, against the gateway's
 * OpenAI Videos surface on three vendors, each a simulator speaking its real protocol on loopback.
 */
let gw: TestGateway;
let sims: { sora: SimServer; veo: SimServer; wan: SimServer };
const TASK_MS = 1_200;

beforeAll(async () => {
  sims = {
    sora: await sora.simulator.start({ taskMs: TASK_MS }),
    veo: await veo.simulator.start({ taskMs: TASK_MS }),
    wan: await wan.simulator.start({ taskMs: TASK_MS }),
  };
  gw = await startTestGateway(
    upstreamsFor([
      { module: sora, sim: sims.sora },
      { module: veo, sim: sims.veo },
      { module: wan, sim: sims.wan },
    ]),
  );
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(Object.values(sims ?? {}).map((s) => s.close()));
});

const client = (key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key });
const png = () => toFile(samplePng(), 'frame.png', { type: 'image/png' });

/** Retrieves until the job settles, recording every status seen on the way (the create's answer first). */
async function untilDone(c: OpenAI, id: string, first?: string): Promise<{ video: OpenAI.Videos.Video; seen: string[] }> {
  const seen: string[] = first ? [first] : [];
  const until = Date.now() + 15_000;
  for (;;) {
    const video = await c.videos.retrieve(id);
    if (seen[seen.length - 1] !== video.status) seen.push(video.status);
    if (video.status === 'completed' || video.status === 'failed') return { video, seen };
    if (Date.now() > until) throw new Error(`still ${video.status}`);
    await new Promise((r) => setTimeout(r, 60));
  }
}

async function bytesOf(res: Response): Promise<Buffer> {
  return Buffer.from(await res.arrayBuffer());
}

describe.each([
  { vendor: 'sora', model: 'sora-2', imageModel: 'sora-2', size: '1280x720' as const },
  { vendor: 'veo', model: 'veo-3.1-generate-001', imageModel: 'veo-3.1-generate-001', size: '1280x720' as const },
  { vendor: 'wan', model: 'wan2.6-t2v', imageModel: 'wan2.6-i2v', size: undefined },
])('openai SDK on $vendor', ({ model, imageModel, size }) => {
  it('creates, passes through queued and in_progress to completed, and downloads the bytes the vendor served', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    const created = await c.videos.create({ model, prompt: 'a red fox running through snow', seconds: '8' as never, ...(size ? { size } : {}) });
    expect(created).toMatchObject({ object: 'video', model, status: 'queued', progress: 0, completed_at: null, error: null, remixed_from_video_id: null });
    expect(created.seconds).toBe('8');
    expect(typeof created.created_at).toBe('number');
    // Veo's operation says only "not done": queued until the first poll finds it running.
    const { video, seen } = await untilDone(c, created.id, created.status);
    expect(seen).toEqual(['queued', 'in_progress', 'completed']);
    expect(video).toMatchObject({ id: created.id, status: 'completed', progress: 100, prompt: 'a red fox running through snow' });
    expect(video.completed_at).toBeGreaterThanOrEqual(video.created_at);
    const bytes = await bytesOf(await c.videos.downloadContent(created.id));
    expect(bytes.equals(sampleMp4())).toBe(true);
    // Billed for the seconds the vendor reported, once.
    const balance = await gw.balance(account);
    expect(balance).toBe(100_000_000 - Number(video.seconds) * 100_000);
  });

  it('creates from an uploaded image file', async () => {
    const { key } = await gw.newKey(100);
    const c = client(key);
    const created = await c.videos.create({ model: imageModel, prompt: 'the picture comes alive', input_reference: await png(), ...(size ? { size } : {}) } as never);
    expect(created.status).toBe('queued');
    const { video } = await untilDone(c, created.id);
    expect(video.status).toBe('completed');
  });
});

describe('openai SDK: what each vendor received for an uploaded image', () => {
  it('Veo gets the image inline as base64 (no fetch of the gateway link)', async () => {
    const { key } = await gw.newKey(100);
    sims.veo.reset();
    await client(key).videos.create({ model: 'veo-3.1-generate-001', prompt: 'x', input_reference: await png() } as never);
    const sent = sims.veo.lastReceived('POST', /:predictLongRunning$/)!.json;
    expect(sent.instances[0].image).toEqual({ bytesBase64Encoded: samplePng().toString('base64'), mimeType: 'image/png' });
  });

  it('wan and Sora get a signed gateway link that serves exactly the uploaded bytes, without any key', async () => {
    const { key } = await gw.newKey(100);
    sims.wan.reset();
    sims.sora.reset();
    await client(key).videos.create({ model: 'wan2.6-i2v', prompt: 'x', input_reference: await png() } as never);
    await client(key).videos.create({ model: 'sora-2', prompt: 'x', size: '1280x720', input_reference: await png() } as never);
    const links = [
      sims.wan.lastReceived('POST', /video-synthesis$/)!.json.input.img_url as string,
      sims.sora.lastReceived('POST', '/v1/videos')!.json.input_reference.image_url as string,
    ];
    for (const link of links) {
      expect(link.startsWith(`${gw.url}/uploads/`)).toBe(true);
      const res = await fetch(link);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('image/png');
      expect((await bytesOf(res)).equals(samplePng())).toBe(true);
      // The same path without the signature, or with a tampered one, serves nothing.
      expect((await fetch(link.split('?')[0]!)).status).toBe(404);
      const sig = new URL(link).searchParams.get('signature')!;
      const tampered = link.replace(`signature=${sig}`, `signature=${sig[0] === 'A' ? 'B' : 'A'}${sig.slice(1)}`);
      expect((await fetch(tampered)).status).toBe(404);
    }
  });
});

describe('openai SDK: list, remix, delete', () => {
  it('auto-paginates the account\'s videos newest first over several pages, and sees no other account\'s', async () => {
    const { key } = await gw.newKey(100);
    const other = await gw.newKey(100);
    const c = client(key);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await c.videos.create({ model: 'sora-2', prompt: `fox ${i}` })).id);
    await client(other.key).videos.create({ model: 'sora-2', prompt: 'not yours' });
    const seen: string[] = [];
    let pages = 0;
    for await (const page of (await c.videos.list({ limit: 2 })).iterPages()) {
      pages++;
      seen.push(...page.data.map((v) => v.id));
    }
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].reverse());
    const all: string[] = [];
    for await (const v of c.videos.list({ limit: 2, order: 'asc' })) all.push(v.id);
    expect(all).toEqual(ids);
  });

  it('remixes a completed Sora video; elsewhere remix is a 400 naming the reason', async () => {
    const { key } = await gw.newKey(100);
    const c = client(key);
    const source = await c.videos.create({ model: 'sora-2', prompt: 'a fox', seconds: '4' });
    await untilDone(c, source.id);
    const remix = await c.videos.remix(source.id, { prompt: 'a fox, in watercolour' });
    expect(remix).toMatchObject({ object: 'video', status: 'queued', remixed_from_video_id: source.id, prompt: 'a fox, in watercolour', seconds: '4' });
    const upstream = sims.sora.lastReceived('POST', /\/remix$/)!;
    expect(upstream.json).toEqual({ prompt: 'a fox, in watercolour' });
    const { video } = await untilDone(c, remix.id);
    expect(video.status).toBe('completed');
    expect((video as unknown as { vendor_data: object }).vendor_data).toMatchObject({ remixed_from_video_id: expect.stringMatching(/^video_/) });

    const veoJob = await c.videos.create({ model: 'veo-3.1-generate-001', prompt: 'x' });
    await untilDone(c, veoJob.id);
    const err = await c.videos.remix(veoJob.id, { prompt: 'y' }).catch((e) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err.error).toMatchObject({ type: 'invalid_request_error', code: 'remix_unsupported' });
  });

  it('deletes a completed video: it disappears from reads and lists', async () => {
    const { key } = await gw.newKey(100);
    const c = client(key);
    const v = await c.videos.create({ model: 'sora-2', prompt: 'x' });
    await untilDone(c, v.id);
    expect(await c.videos.delete(v.id)).toEqual({ id: v.id, object: 'video.deleted', deleted: true });
    await expect(c.videos.retrieve(v.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(c.videos.downloadContent(v.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(c.videos.delete(v.id)).rejects.toBeInstanceOf(NotFoundError);
    const listed: string[] = [];
    for await (const x of c.videos.list()) listed.push(x.id);
    expect(listed).not.toContain(v.id);
  });

  it('deletes a processing wan job: cancelled upstream, hold released, nothing charged', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    sims.wan.reset();
    const v = await c.videos.create({ model: 'wan2.6-t2v', prompt: 'x', seconds: '5' as never });
    expect(await gw.balance(account)).toBe(100_000_000 - 500_000);
    await c.videos.delete(v.id);
    expect(sims.wan.received('POST', /\/cancel$/)).toHaveLength(1);
    expect(await gw.balance(account)).toBe(100_000_000);
    await expect(c.videos.retrieve(v.id)).rejects.toBeInstanceOf(NotFoundError);
  });
});
