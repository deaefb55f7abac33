import OpenAI, { toFile } from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { fragmentedMp4, sampleWithLyingHeaders } from '../helpers/mp4-boxes.js';
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
