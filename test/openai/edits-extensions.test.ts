import OpenAI, { BadRequestError, NotFoundError, toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4 } from '../../src/sim/media.js';
import { readBody } from '../../src/sim/openai-videos.js';
import { videoModule as azure } from '../../src/video/vendors/azure-sora/index.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * OpenAI's video edits and extensions (POST /v1/videos/edits, /v1/videos/extensions) driven by the
 * official SDK (videos.edit, videos.extend) against the gateway and the Sora simulator on loopback:
 * what the vendor receives for a `{id}` and for an uploaded video, what is held and what is billed
 * (every price is 0.1 a second, so 1 s is 100,000 micro-units).
 */
let gw: TestGateway;
let sims: { sora: SimServer; azure: SimServer };
const START = 100_000_000;
const PER_SECOND = 100_000;

beforeAll(async () => {
  sims = { sora: await sora.simulator.start({ taskMs: 300 }), azure: await azure.simulator.start({ taskMs: 300 }) };
  gw = await startTestGateway(upstreamsFor([{ module: sora, sim: sims.sora }, { module: azure, sim: sims.azure }]));
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(Object.values(sims ?? {}).map((s) => s.close()));
});

const client = (key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
const mp4 = () => toFile(sampleMp4(), 'my holiday.mp4', { type: 'video/mp4' });

async function untilDone(c: OpenAI, id: string): Promise<OpenAI.Videos.Video> {
  const until = Date.now() + 15_000;
  for (;;) {
    const v = await c.videos.retrieve(id);
    if (v.status === 'completed' || v.status === 'failed') return v;
    if (Date.now() > until) throw new Error(`still ${v.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A finished 4-second Sora video of a fresh account. */
async function finished(balance = 100) {
  const { key, account } = await gw.newKey(balance);
  const c = client(key);
  const source = await c.videos.create({ model: 'sora-2', prompt: 'a fox', seconds: '4' });
  expect((await untilDone(c, source.id)).status).toBe('completed');
  return { c, key, account, source, upstreamId: sims.sora.lastReceived('GET', /^\/v1\/videos\/video_[^/]+$/)!.path.split('/').pop()! };
}

describe('videos.edit', () => {
  it('edits a completed video by {id}: the vendor gets its own id as JSON; held and billed as long as the source', async () => {
    const { c, account, source, upstreamId } = await finished();
    expect(await gw.balance(account)).toBe(START - 4 * PER_SECOND);
    const edit = await c.videos.edit({ prompt: 'in watercolour', video: { id: source.id } });
    expect(edit).toMatchObject({ object: 'video', status: 'queued', model: 'sora-2', seconds: '4', prompt: 'in watercolour', remixed_from_video_id: null });
    expect(edit.id).not.toBe(source.id);
    const sent = sims.sora.lastReceived('POST', '/v1/videos/edits')!;
    expect(sent.headers['content-type']).toMatch(/^application\/json/);
    expect(sent.json).toEqual({ prompt: 'in watercolour', video: { id: upstreamId } });
    expect(await gw.balance(account)).toBe(START - 8 * PER_SECOND);
    const done = await untilDone(c, edit.id);
    expect(done).toMatchObject({ status: 'completed', seconds: '4' });
    expect(Buffer.from(await (await c.videos.downloadContent(edit.id)).arrayBuffer()).equals(sampleMp4())).toBe(true);
    expect(await gw.balance(account)).toBe(START - 8 * PER_SECOND);
    // The gateway's ids never carry the vendor's.
    expect(JSON.stringify(edit)).not.toContain(upstreamId);
  });

  it('edits an uploaded video: the vendor gets the file in a multipart form; billed by the upload\'s length', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    const edit = await c.videos.edit({ prompt: 'make it night', video: await mp4() });
    expect(edit).toMatchObject({ status: 'queued', seconds: '2', size: '320x180' });
    const body = (await readBody(sims.sora.lastReceived('POST', '/v1/videos/edits')!))!;
    expect(body.multipart).toBe(true);
    expect(body.fields).toEqual({ prompt: 'make it night' });
    expect(body.files).toHaveLength(1);
    expect(body.files[0]).toMatchObject({ field: 'video', filename: 'video.mp4', type: 'video/mp4' });
    expect(body.files[0]!.data.equals(sampleMp4())).toBe(true);
    expect(await gw.balance(account)).toBe(START - 2 * PER_SECOND);
    expect((await untilDone(c, edit.id)).status).toBe('completed');
    expect(await gw.balance(account)).toBe(START - 2 * PER_SECOND);
  });

  it('an upload named with a model the vendor would not run (its body names none) is refused before anything is held or sent', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    const sent = () => sims.sora.received('POST', /^\/v1\/videos\/(edits|extensions)$/).length;
    const before = sent();
    for (const call of [
      async () => c.videos.edit({ prompt: 'make it night', video: await mp4(), model: 'sora-2-pro' } as never),
      async () => c.videos.extend({ prompt: 'go on', seconds: '4', video: await mp4(), model: 'sora-2-pro' } as never),
    ]) {
      const err = await call().catch((e) => e);
      expect(err).toBeInstanceOf(BadRequestError);
      expect(err.error).toMatchObject({ type: 'invalid_request_error', param: 'model' });
    }
    expect(sent()).toBe(before);
    expect(await gw.balance(account)).toBe(START);
  });

  it('a failed edit is not charged: its hold goes back whole', async () => {
    const { c, account, source } = await finished();
    const edit = await c.videos.edit({ prompt: 'fox [fail]', video: { id: source.id } });
    expect(await gw.balance(account)).toBe(START - 8 * PER_SECOND);
    expect((await untilDone(c, edit.id)).status).toBe('failed');
    expect(await gw.balance(account)).toBe(START - 4 * PER_SECOND);
  });
});

describe('videos.extend', () => {
  it('extends a completed video: held for the new segment, billed for it, the object shows the stitched total', async () => {
    const { c, account, source, upstreamId } = await finished();
    const ext = await c.videos.extend({ prompt: 'the fox runs on', seconds: '8' as never, video: { id: source.id } });
    expect(ext).toMatchObject({ status: 'queued', seconds: '8' });
    expect(sims.sora.lastReceived('POST', '/v1/videos/extensions')!.json).toEqual({ prompt: 'the fox runs on', seconds: '8', video: { id: upstreamId } });
    expect(await gw.balance(account)).toBe(START - 12 * PER_SECOND);
    const done = await untilDone(c, ext.id);
    expect(done).toMatchObject({ status: 'completed', seconds: '12' });
    expect(await gw.balance(account)).toBe(START - 12 * PER_SECOND);
  });

  it('bills the segment the vendor returned (total less the source), not the one asked for', async () => {
    const { c, account, source } = await finished();
    // The finished 4 s video, extended by 4 s asked, of which the simulator makes 3 s: 7 s in all.
    const ext = await c.videos.extend({ prompt: 'on and on [short-segment]', seconds: '4', video: { id: source.id } });
    expect(await gw.balance(account)).toBe(START - 8 * PER_SECOND);
    const done = await untilDone(c, ext.id);
    expect(done).toMatchObject({ status: 'completed', seconds: '7' });
    expect(await gw.balance(account)).toBe(START - 7 * PER_SECOND);
  });

  it('extends an uploaded video: sent as a form; billed the segment asked, its length being only what the file claims', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    // The 2 s upload, extended by 4 s asked, of which the simulator makes 3 s: 5 s in all.
    const ext = await c.videos.extend({ prompt: 'on and on [short-segment]', seconds: '4', video: await mp4() });
    const body = (await readBody(sims.sora.lastReceived('POST', '/v1/videos/extensions')!))!;
    expect(body.fields).toEqual({ prompt: 'on and on [short-segment]', seconds: '4' });
    expect(body.files[0]!.data.equals(sampleMp4())).toBe(true);
    expect(await gw.balance(account)).toBe(START - 4 * PER_SECOND);
    const done = await untilDone(c, ext.id);
    expect(done).toMatchObject({ status: 'completed', seconds: '5' });
    expect(await gw.balance(account)).toBe(START - 4 * PER_SECOND);
  });

  it('refuses a length the vendor does not offer before anything is held or sent', async () => {
    const { c, account, source } = await finished();
    const before = sims.sora.received('POST', '/v1/videos/extensions').length;
    const err = await c.videos.extend({ prompt: 'on', seconds: '7' as never, video: { id: source.id } }).catch((e) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err.error).toMatchObject({ type: 'invalid_request_error', param: 'seconds' });
    expect(sims.sora.received('POST', '/v1/videos/extensions')).toHaveLength(before);
    expect(await gw.balance(account)).toBe(START - 4 * PER_SECOND);
  });
});

describe('refusals', () => {
  it("another account's video id is 404, as if it did not exist; nothing is sent or held", async () => {
    const { source } = await finished();
    const other = await gw.newKey(100);
    const c = client(other.key);
    const before = sims.sora.received('POST', /^\/v1\/videos\/(edits|extensions)$/).length;
    for (const call of [() => c.videos.edit({ prompt: 'x', video: { id: source.id } }), () => c.videos.extend({ prompt: 'x', seconds: '4', video: { id: source.id } })]) {
      const err = await call().catch((e) => e);
      expect(err).toBeInstanceOf(NotFoundError);
      expect(err.error).toMatchObject({ code: 'video_not_found' });
    }
    expect(sims.sora.received('POST', /^\/v1\/videos\/(edits|extensions)$/)).toHaveLength(before);
    expect(await gw.balance(other.account)).toBe(START);
  });

  it('a video not completed yet is 400 video_not_ready', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    const running = await c.videos.create({ model: 'sora-2', prompt: 'a fox', seconds: '4' });
    const err = await c.videos.edit({ prompt: 'x', video: { id: running.id } }).catch((e) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err.error).toMatchObject({ code: 'video_not_ready' });
    expect(await gw.balance(account)).toBe(START - 4 * PER_SECOND);
  });

  it('a model whose vendor has no edits or extensions (Azure\'s jobs API) is 400 operation_unsupported', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    const az = await c.videos.create({ model: 'sora', prompt: 'a fox', seconds: '4', size: '1280x720' } as never);
    expect((await untilDone(c, az.id)).status).toBe('completed');
    const spent = await gw.balance(account);
    const sent = () => sims.azure.received('POST', /\/jobs/).length + sims.sora.received('POST', /^\/v1\/videos\/(edits|extensions)$/).length;
    const before = sent();
    for (const call of [
      () => c.videos.edit({ prompt: 'x', video: { id: az.id } }),
      () => c.videos.extend({ prompt: 'x', seconds: '4', video: { id: az.id } }),
      async () => c.videos.edit({ prompt: 'x', video: await mp4(), model: 'sora' } as never),
    ]) {
      const err = await call().catch((e) => e);
      expect(err).toBeInstanceOf(BadRequestError);
      expect(err.error).toMatchObject({ type: 'invalid_request_error', code: 'operation_unsupported', param: 'model' });
    }
    expect(sent()).toBe(before);
    expect(await gw.balance(account)).toBe(spent);
  });

  it('402 when the balance cannot cover the hold, before the vendor is asked', async () => {
    const { c, account, source } = await finished(0.5);
    const before = sims.sora.received('POST', /^\/v1\/videos\/(edits|extensions)$/).length;
    // 0.1 left: an 8 s extension holds 0.8; an edit of the 4 s video holds 0.4.
    const ext = await c.videos.extend({ prompt: 'x', seconds: '8' as never, video: { id: source.id } }).catch((e) => e);
    expect(ext.status).toBe(402);
    expect(ext.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
    expect((await c.videos.edit({ prompt: 'x', video: { id: source.id } }).catch((e) => e)).status).toBe(402);
    expect(sims.sora.received('POST', /^\/v1\/videos\/(edits|extensions)$/)).toHaveLength(before);
    expect(await gw.balance(account)).toBe(100_000);
  });
});
