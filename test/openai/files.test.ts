import OpenAI, { BadRequestError, NotFoundError, toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4, samplePng } from '../../src/sim/media.js';
import { videoModule as veo } from '../../src/video/vendors/veo/index.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * The Files API through the official SDK (files.create/retrieve/list/delete/content), scoped per
 * account, and `input_reference: {file_id}` on a video create resolving to the uploaded file.
 */
let gw: TestGateway;
let sims: { veo: SimServer; wan: SimServer };

beforeAll(async () => {
  sims = { veo: await veo.simulator.start({ taskMs: 300 }), wan: await wan.simulator.start({ taskMs: 300 }) };
  gw = await startTestGateway(upstreamsFor([{ module: veo, sim: sims.veo }, { module: wan, sim: sims.wan }]));
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(Object.values(sims ?? {}).map((s) => s.close()));
});

const client = (key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key });
const png = () => toFile(samplePng(), 'frame.png', { type: 'image/png' });

describe('Files API with the official SDK', () => {
  it('uploads, retrieves, lists page by page, downloads and deletes', async () => {
    const { key } = await gw.newKey(100);
    const c = client(key);
    const f = await c.files.create({ file: await png(), purpose: 'vision' });
    expect(f).toMatchObject({ object: 'file', bytes: samplePng().length, filename: 'frame.png', purpose: 'vision', status: 'processed' });
    expect(f.id).toMatch(/^file-[A-Za-z0-9_-]+$/);
    expect(f.expires_at! - f.created_at).toBe(30 * 24 * 3600);
    expect(await c.files.retrieve(f.id)).toEqual(f);

    const content = await c.files.content(f.id);
    expect(content.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await content.arrayBuffer()).equals(samplePng())).toBe(true);

    const ids = [f.id];
    for (let i = 0; i < 2; i++) ids.push((await c.files.create({ file: await toFile(sampleMp4(), `clip${i}.mp4`), purpose: 'user_data' })).id);
    const pages: string[][] = [];
    for await (const page of (await c.files.list({ limit: 2 })).iterPages()) pages.push(page.data.map((x) => x.id));
    expect(pages).toEqual([[ids[2], ids[1]], [ids[0]]]);
    const vision: string[] = [];
    for await (const x of c.files.list({ purpose: 'vision' })) vision.push(x.id);
    expect(vision).toEqual([f.id]);
    expect((await c.files.retrieve(ids[1]!)).bytes).toBe(sampleMp4().length);

    expect(await c.files.delete(f.id)).toEqual({ id: f.id, object: 'file', deleted: true });
    await expect(c.files.retrieve(f.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(c.files.content(f.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(c.files.delete(f.id)).rejects.toBeInstanceOf(NotFoundError);
    const left: string[] = [];
    for await (const x of c.files.list()) left.push(x.id);
    expect(left).toEqual([ids[2], ids[1]]);
  });

  it('another account sees nothing of a file: not retrieve, content, delete, list, nor a video create', async () => {
    const owner = client((await gw.newKey(100)).key);
    const other = client((await gw.newKey(100)).key);
    const f = await owner.files.create({ file: await png(), purpose: 'vision' });
    await expect(other.files.retrieve(f.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(other.files.content(f.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(other.files.delete(f.id)).rejects.toBeInstanceOf(NotFoundError);
    const listed: string[] = [];
    for await (const x of other.files.list()) listed.push(x.id);
    expect(listed).toEqual([]);
    const err = await other.videos.create({ model: 'wan2.6-i2v', prompt: 'x', input_reference: { file_id: f.id } }).catch((e) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err.error).toMatchObject({ param: 'input_reference.file_id' });
    // Still the owner's.
    expect((await owner.files.retrieve(f.id)).id).toBe(f.id);
  });

  it('refuses bad uploads with the field at fault', async () => {
    const { key } = await gw.newKey(100);
    const c = client(key);
    const bad = async (p: Promise<unknown>) => ((await p.catch((e) => e)) as BadRequestError).error as { code: string; param?: string };
    expect(await bad(c.files.create({ file: await png(), purpose: 'nonsense' as never }))).toMatchObject({ param: 'purpose' });
    expect(await bad(c.files.create({ file: await png(), purpose: 'vision', expires_after: { anchor: 'created_at', seconds: 10 } }))).toMatchObject({ param: 'expires_after.seconds' });
    expect(await bad(c.files.create({ file: await toFile(Buffer.alloc(0), 'empty.png'), purpose: 'vision' }))).toMatchObject({ param: 'file' });
    const noFile = await fetch(`${gw.url}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: (() => { const f = new FormData(); f.set('purpose', 'vision'); return f; })() });
    expect([noFile.status, (await noFile.json()).error.code]).toEqual([400, 'missing_required_parameter']);
    const json = await call(gw, 'POST', '/v1/files', { key, body: { purpose: 'vision' } });
    expect([json.status, json.json.error.code]).toEqual([400, 'unsupported_media_type']);
    expect((await call(gw, 'GET', '/v1/files?limit=0', { key })).json.error.param).toBe('limit');
    expect((await call(gw, 'GET', '/v1/files?after=file-nope', { key })).json.error.code).toBe('invalid_cursor');
    // A field named like a prototype key: refused as such (as on POST /v1/videos), not as an unreadable form.
    const proto = new FormData();
    proto.set('__proto__', 'x');
    proto.set('purpose', 'vision');
    const r = await fetch(`${gw.url}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: proto });
    expect([r.status, (await r.json()).error.code]).toEqual([400, 'forbidden_key']);
  });

  it('expires_after shortens the life of a file; expired files disappear and the refresher removes them', async () => {
    const short = await startTestGateway(upstreamsFor([{ module: wan, sim: sims.wan }]));
    try {
      const { key, account } = await short.newKey(100);
      const c = new OpenAI({ baseURL: `${short.url}/v1`, apiKey: key });
      const f = await c.files.create({ file: await png(), purpose: 'vision', expires_after: { anchor: 'created_at', seconds: 3600 } });
      expect(f.expires_at! - f.created_at).toBe(3600);
      // Expire it now, as an hour passing would.
      const db = (short.services.store as unknown as { driver: { run(sql: string, p: unknown[]): Promise<number> } }).driver;
      await db.run('UPDATE files SET expires_at = ? WHERE id = ?', [Date.now() - 1, f.id]);
      await expect(c.files.retrieve(f.id)).rejects.toBeInstanceOf(NotFoundError);
      const blob = `files/${(await short.services.store.getAccountByName(account))!.id}/${f.id}`;
      expect(await short.services.video.deps.blobs.size(blob)).toBe(samplePng().length);
      await short.services.poller.tick();
      expect(await short.services.video.deps.blobs.size(blob)).toBeUndefined();
    } finally {
      await short.close();
    }
  });

  it('a delete whose blob removal fails leaves the file whole, and a retry removes both the file and its bytes', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    const f = await c.files.create({ file: await png(), purpose: 'vision' });
    const blobs = gw.services.video.deps.blobs;
    const blob = `files/${(await gw.services.store.getAccountByName(account))!.id}/${f.id}`;
    const realDelete = blobs.delete.bind(blobs);
    // The blob store fails once, as an S3 outage would.
    blobs.delete = async () => {
      blobs.delete = realDelete;
      throw new Error('connect ECONNREFUSED');
    };
    try {
      const failed = await call(gw, 'DELETE', `/v1/files/${f.id}`, { key });
      expect(failed.status).toBeGreaterThanOrEqual(500);
    } finally {
      blobs.delete = realDelete;
    }
    // Not half deleted: still listed, still readable, still the account's to delete.
    expect((await c.files.retrieve(f.id)).id).toBe(f.id);
    expect(await c.files.delete(f.id)).toEqual({ id: f.id, object: 'file', deleted: true });
    expect(await blobs.size(blob)).toBeUndefined();
  });

  it('an upload over video.files.max_bytes is 413 upload_too_large', async () => {
    const small = await startTestGateway({ ...upstreamsFor([{ module: wan, sim: sims.wan }]), video: { files: { max_bytes: 100 } } });
    try {
      const c = new OpenAI({ baseURL: `${small.url}/v1`, apiKey: (await small.newKey(100)).key });
      const err = await c.files.create({ file: await png(), purpose: 'vision' }).catch((e) => e);
      expect([err.status, err.error.code, err.error.param]).toEqual([413, 'upload_too_large', 'file']);
    } finally {
      await small.close();
    }
  });
});

describe('input_reference: {file_id}', () => {
  it('an uploaded image becomes the first frame (wan gets a link that serves the same bytes)', async () => {
    const { key } = await gw.newKey(100);
    const c = client(key);
    const f = await c.files.create({ file: await png(), purpose: 'vision' });
    sims.wan.reset();
    const v = await c.videos.create({ model: 'wan2.6-i2v', prompt: 'the picture comes alive', input_reference: { file_id: f.id } });
    expect(v.status).toBe('queued');
    const link = sims.wan.lastReceived('POST', /video-synthesis$/)!.json.input.img_url as string;
    expect(link.startsWith(`${gw.url}/uploads/`)).toBe(true);
    expect(Buffer.from(await (await fetch(link)).arrayBuffer()).equals(samplePng())).toBe(true);
    // The job keeps its own copy: deleting the file does not take the job's input away.
    await c.files.delete(f.id);
    expect((await fetch(link)).status).toBe(200);
  });

  it('an uploaded video reaches Veo as the video to extend; JSON bodies work as well as the SDK form', async () => {
    const { key } = await gw.newKey(100);
    const f = await client(key).files.create({ file: await toFile(sampleMp4(), 'clip.mp4'), purpose: 'user_data' });
    sims.veo.reset();
    const r = await call(gw, 'POST', '/v1/videos', { key, body: { model: 'veo-3.1-generate-001', prompt: 'go on', input_reference: { file_id: f.id } } });
    expect(r.status).toBe(200);
    expect(sims.veo.lastReceived('POST', /:predictLongRunning$/)!.json.instances[0].video).toEqual({ bytesBase64Encoded: sampleMp4().toString('base64'), mimeType: 'video/mp4' });
  });

  it('an unknown file id, or file_id with image_url, is a 400 naming the field', async () => {
    const { key } = await gw.newKey(100);
    const unknown = await call(gw, 'POST', '/v1/videos', { key, body: { model: 'wan2.6-i2v', prompt: 'x', input_reference: { file_id: 'file-doesnotexist' } } });
    expect([unknown.status, unknown.json.error.param]).toEqual([400, 'input_reference.file_id']);
    const both = await call(gw, 'POST', '/v1/videos', { key, body: { model: 'wan2.6-i2v', prompt: 'x', input_reference: { file_id: 'file-x', image_url: 'https://x/y.png' } } });
    expect([both.status, both.json.error.param]).toEqual([400, 'input_reference']);
  });
});
