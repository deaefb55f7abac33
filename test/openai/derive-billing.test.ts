import OpenAI, { toFile } from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { MAX_MP4_STEPS } from '../../src/core/mp4-header.js';
import { fragmentedMp4, freeBoxes, sampleWithLyingHeaders } from '../helpers/mp4-boxes.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * What edits and extensions of an uploaded video hold and bill when the client's file lies about
 * its own length, over real HTTP with the Sora simulator (which, like a real vendor, times the
 * video by its frames). Every price is 0.1 a second: 1 s is 100,000 micro-units.
 */
let gw: TestGateway;
let sim: SimServer;
const START = 100_000_000;
const PER_SECOND = 100_000;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 100 });
  gw = await startTestGateway(upstreamsFor([{ module: sora, sim }]));
});
afterEach(() => sim.clearFaults());
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

const client = (key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });

async function untilDone(c: OpenAI, id: string): Promise<OpenAI.Videos.Video> {
  const until = Date.now() + 15_000;
  for (;;) {
    const v = await c.videos.retrieve(id);
    if (v.status === 'completed' || v.status === 'failed') return v;
    if (Date.now() > until) throw new Error(`still ${v.status}`);
    await new Promise((r) => setTimeout(r, 30));
  }
}

describe('an edit of an uploaded video whose header understates its length', () => {
  it('headers claiming 0.001 s over 2 s of frames: held and billed 2 s, not 0.001 s', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    const edit = await c.videos.edit({ prompt: 'at night', video: await toFile(sampleWithLyingHeaders(1), 'v.mp4') });
    expect(edit.seconds).toBe('2');
    expect(await gw.balance(account)).toBe(START - 2 * PER_SECOND);
    expect((await untilDone(c, edit.id)).status).toBe('completed');
    expect(await gw.balance(account)).toBe(START - 2 * PER_SECOND);
  });

  it('a fragmented MP4 whose movie header claims 0.001 s over 20 s of fragments: held and billed 20 s', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    const edit = await c.videos.edit({ prompt: 'at night', video: await toFile(fragmentedMp4(1, 20), 'v.mp4') });
    expect(edit.seconds).toBe('20');
    expect(await gw.balance(account)).toBe(START - 20 * PER_SECOND);
    expect((await untilDone(c, edit.id)).status).toBe('completed');
    expect(await gw.balance(account)).toBe(START - 20 * PER_SECOND);
  });
});

describe('an edit of an uploaded fragmented MP4 padded so its fragments lie deep in the file', () => {
  it('4,200 free boxes between the moov and 20 s of fragments under a 1-tick header: held and billed 20 s, and so is a remix of it', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    const file = fragmentedMp4(1, 20, { afterMoov: freeBoxes(4_200) });
    const edit = await c.videos.edit({ prompt: 'at night', video: await toFile(file, 'v.mp4') });
    expect(edit.seconds).toBe('20');
    expect(await gw.balance(account)).toBe(START - 20 * PER_SECOND);
    expect((await untilDone(c, edit.id)).status).toBe('completed');
    expect(await gw.balance(account)).toBe(START - 20 * PER_SECOND);
    const remix = await c.videos.remix(edit.id, { prompt: 'by day' });
    expect((await untilDone(c, remix.id)).status).toBe('completed');
    expect(await gw.balance(account)).toBe(START - 40 * PER_SECOND);
  });

  it('more boxes than the gateway reads before the fragments: 400 invalid_media, nothing held', async () => {
    const { key, account } = await gw.newKey(100);
    const file = fragmentedMp4(1, 20, { afterMoov: freeBoxes(MAX_MP4_STEPS) });
    const err = await client(key).videos.edit({ prompt: 'at night', video: await toFile(file, 'v.mp4') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({ status: 400, code: 'invalid_media', param: 'video' });
    expect((err as Error).message).toMatch(/cannot be measured/);
    expect(await gw.balance(account)).toBe(START);
  });
});

/** Every poll of a Sora video answers this finished object until the faults are cleared. */
function pollsAnswerCompleted(seconds: unknown): void {
  const answer = { id: 'video_x', object: 'video', model: 'sora-2', status: 'completed', progress: 100, seconds, size: '320x180', error: null };
  sim.inject({ kind: 'status', status: 200, json: answer }, 10_000, /^\/v1\/videos\/video_[^/]+$/);
}

describe('an extension of an uploaded video whose header overstates its length', () => {
  it('a 2 s upload claiming 21.9 s, extended by 20 s: billed the 20 s segment, not the stitched 22 s less the claim', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    // The movie header alone says 21.9 s (timescale 1000); the frames are the sample's 2 s.
    const claim = sampleWithLyingHeaders(2000);
    claim.writeUInt32BE(21_900, 40 + 8 + 16);
    const ext = await c.videos.extend({ prompt: 'on and on', seconds: '20' as never, video: await toFile(claim, 'v.mp4') });
    expect(await gw.balance(account)).toBe(START - 20 * PER_SECOND);
    // The vendor made 20 s more of the 2 s it decoded.
    pollsAnswerCompleted('22');
    const done = await untilDone(c, ext.id);
    expect(done).toMatchObject({ status: 'completed', seconds: '22' });
    expect(await gw.balance(account)).toBe(START - 20 * PER_SECOND);
  });
});

describe('an extension whose vendor reports a stitched total shorter than the segment asked', () => {
  it('a finished 4 s video extended by 8 s, reported as 2 s in all: billed 2 s, no segment being longer than the whole', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    const source = await c.videos.create({ model: 'sora-2', prompt: 'a fox', seconds: '4' });
    expect((await untilDone(c, source.id)).status).toBe('completed');
    const ext = await c.videos.extend({ prompt: 'on', seconds: '8' as never, video: { id: source.id } });
    expect(await gw.balance(account)).toBe(START - 12 * PER_SECOND);
    pollsAnswerCompleted('2');
    expect(await untilDone(c, ext.id)).toMatchObject({ status: 'completed', seconds: '2' });
    expect(await gw.balance(account)).toBe(START - 6 * PER_SECOND);
  });

  it('an uploaded video extended by 8 s, reported as 3 s in all: billed 3 s', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    const ext = await c.videos.extend({ prompt: 'on', seconds: '8' as never, video: await toFile(sampleWithLyingHeaders(2000), 'v.mp4') });
    pollsAnswerCompleted(3);
    expect(await untilDone(c, ext.id)).toMatchObject({ status: 'completed', seconds: '3' });
    expect(await gw.balance(account)).toBe(START - 3 * PER_SECOND);
  });

  it('a total that is no figure (missing, zero, NaN, a word) bills the segment held', async () => {
    for (const total of [undefined, 0, 'NaN', 'twelve', -5]) {
      const { key, account } = await gw.newKey(100);
      const c = client(key);
      const ext = await c.videos.extend({ prompt: 'on', seconds: '4', video: await toFile(sampleWithLyingHeaders(2000), 'v.mp4') });
      pollsAnswerCompleted(total);
      expect((await untilDone(c, ext.id)).status).toBe('completed');
      expect(await gw.balance(account), String(total)).toBe(START - 4 * PER_SECOND);
      sim.clearFaults();
    }
  });
});
