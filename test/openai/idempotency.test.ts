import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4, samplePng } from '../../src/sim/media.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * Idempotency-Key on the OpenAI Videos surface (create with an uploaded file, remix, edits,
 * extensions, characters), driven by the official SDK: its retries (on a timeout, then on the 409
 * while the first is still processed) reach one job, sent to the vendor once and held once.
 */
let gw: TestGateway;
let sim: SimServer;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 300 });
  gw = await startTestGateway(upstreamsFor([{ module: sora, sim }]));
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

const client = (key: string, opts: { maxRetries?: number; timeout?: number } = {}) =>
  new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: opts.maxRetries ?? 0, timeout: opts.timeout });
const idem = (k: string) => ({ headers: { 'Idempotency-Key': k } });
const sent = (path: string) => sim.received('POST', path).length;
const holds = async (name: string) => {
  const id = (await gw.services.store.getAccountByName(name))!.id;
  return (await gw.services.store.listLedger(id)).filter((e) => e.kind === 'hold').length;
};

async function finished(c: OpenAI) {
  const v = await c.videos.create({ model: 'sora-2', prompt: 'a fox', seconds: '4' });
  for (const until = Date.now() + 15_000; ; ) {
    const got = await c.videos.retrieve(v.id);
    if (got.status === 'completed') return got;
    if (Date.now() > until) throw new Error(`still ${got.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('Idempotency-Key on the OpenAI Videos API', () => {
  it("the SDK's retries after a timeout reach the one job the first attempt made", async () => {
    const { key, account } = await gw.newKey(100);
    const before = sent('/v1/videos');
    sim.inject({ kind: 'latency', ms: 1_500 }, 1, /^\/v1\/videos$/, 'POST');
    const c = client(key, { maxRetries: 3, timeout: 500 });
    const video = await c.videos.create({ model: 'sora-2', prompt: 'a slow fox', seconds: '4' }, idem('sdk-retry-1'));
    expect(video.object).toBe('video');
    expect(sent('/v1/videos')).toBe(before + 1);
    expect(await holds(account)).toBe(1);
    const listed = await client(key).videos.list();
    expect(listed.data.map((v) => v.id)).toEqual([video.id]);
  }, 30_000);

  it('a multipart create with a file: the same file is the same request, another file another', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    const png = () => toFile(samplePng(), 'first.png', { type: 'image/png' });
    const first = await c.videos.create({ model: 'sora-2', prompt: 'from a frame', input_reference: await png() }, idem('file-1'));
    const before = sent('/v1/videos');
    const { data, response } = await c.videos.create({ model: 'sora-2', prompt: 'from a frame', input_reference: await png() }, idem('file-1')).withResponse();
    expect(data.id).toBe(first.id);
    expect(response.headers.get('idempotent-replayed')).toBe('true');
    const other = Buffer.concat([samplePng(), Buffer.from([0])]);
    const err = await c.videos.create({ model: 'sora-2', prompt: 'from a frame', input_reference: await toFile(other, 'first.png', { type: 'image/png' }) }, idem('file-1')).catch((e) => e);
    expect(err.status).toBe(422);
    expect(err.error).toMatchObject({ code: 'idempotency_key_reused', param: 'Idempotency-Key' });
    expect(sent('/v1/videos')).toBe(before);
    expect(await holds(account)).toBe(1);
  });

  it('remix, edit and extension: each repeat is its first job; the remix key on another source is reused', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    const source = await finished(c);
    const other = await finished(c);
    const remix = await c.videos.remix(source.id, { prompt: 'at night' }, idem('remix-1'));
    const edit = await c.videos.edit({ prompt: 'in watercolour', video: { id: source.id } }, idem('edit-1'));
    const extend = await c.videos.extend({ prompt: 'on and on', seconds: '4', video: { id: source.id } }, idem('extend-1'));
    const counts = () => [sim.received('POST', /\/remix$/).length, sent('/v1/videos/edits'), sent('/v1/videos/extensions')];
    expect(counts()).toEqual([1, 1, 1]);
    expect((await c.videos.remix(source.id, { prompt: 'at night' }, idem('remix-1'))).id).toBe(remix.id);
    expect((await c.videos.edit({ prompt: 'in watercolour', video: { id: source.id } }, idem('edit-1'))).id).toBe(edit.id);
    expect((await c.videos.extend({ prompt: 'on and on', seconds: '4', video: { id: source.id } }, idem('extend-1'))).id).toBe(extend.id);
    expect(counts()).toEqual([1, 1, 1]);
    const elsewhere = await c.videos.remix(other.id, { prompt: 'at night' }, idem('remix-1')).catch((e) => e);
    expect(elsewhere.status).toBe(422);
    // Two sources, one remix, one edit, one extension.
    expect(await holds(account)).toBe(5);
  }, 30_000);

  it('a character: a repeat answers the same id without asking the vendor again', async () => {
    const { key } = await gw.newKey(100);
    const c = client(key);
    const mp4 = () => toFile(sampleMp4(), 'luna.mp4', { type: 'video/mp4' });
    const made = await c.videos.createCharacter({ name: 'Luna', video: await mp4() }, idem('char-1'));
    const before = sent('/v1/videos/characters');
    const { data: again, response } = await c.videos.createCharacter({ name: 'Luna', video: await mp4() }, idem('char-1')).withResponse();
    expect(response.headers.get('idempotent-replayed')).toBe('true');
    expect(again).toMatchObject({ id: made.id, created_at: made.created_at, name: 'Luna' });
    expect(sent('/v1/videos/characters')).toBe(before);
  });
});
