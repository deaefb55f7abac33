import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MediaFetcher, MediaUnreachableError } from '../../src/http/media.js';
import { SimServer, type SimReply } from '../../src/sim/framework.js';
import { samplePng } from '../../src/sim/media.js';
import { eventually, fdCount } from './client.js';
import { FaultUpstream } from './fault-upstream.js';

/**
 * Faults while fetching a client's media (e.g. a first frame a vendor wants as bytes), in this
 * process: every failure is a MediaUnreachableError (the job fails, spec 3), within the fetch
 * deadline, with the connection and every descriptor released.
 */
let origin: SimServer;
let media: FaultUpstream;
const fetcher = new MediaFetcher({ allowPrivateNetworks: true, maxBytes: 1024 * 1024, timeoutMs: 1_000 });
const IMAGE = /\/frame\.png$/;

beforeAll(async () => {
  origin = await SimServer.start('media-origin', (): SimReply => ({ headers: { 'content-type': 'image/png' }, body: Buffer.concat([samplePng(), Buffer.alloc(32 * 1024)]) }));
  media = await FaultUpstream.start(origin.url);
  // Warm: the first fetch sets up what every later one reuses (DNS, the agent).
  await fetcher.fetch(`${media.url}/frame.png`, 'frame_images[0].image_url');
});
afterAll(async () => {
  await fetcher.close();
  await media.close();
  await origin.close();
});
beforeEach(() => media.clear());

async function expectReleased(fds: number): Promise<void> {
  expect(await eventually(() => media.openConnections === 0), 'a media connection was left open').toBe(true);
  let now = 0;
  expect(await eventually(() => (now = fdCount()) <= fds), `descriptors: ${now} after, ${fds} before`).toBe(true);
}

describe('media fetch: the remote server fails', () => {
  const cases: [string, Parameters<FaultUpstream['set']>[1]][] = [
    ['resets before the headers', { kind: 'reset-before-headers' }],
    ['never sends the headers', { kind: 'stall-headers' }],
    ['resets mid-body', { kind: 'reset-mid-body', after: 1000 }],
    ['sends fewer bytes than its Content-Length', { kind: 'short-body', send: 1000 }],
    ['stalls mid-body', { kind: 'stall', after: 1000 }],
    ['trickles its body a byte at a time', { kind: 'trickle', everyMs: 5 }],
    ['answers a redirect loop (redirects are not followed)', { kind: 'redirect-loop' }],
    ['answers 404', { kind: 'answer', status: 404, body: 'not here' }],
  ];
  for (const [what, fault] of cases) {
    it(`${what}: the media is unreachable, within the deadline`, async () => {
      const fds = fdCount();
      media.set(IMAGE, fault);
      const started = Date.now();
      await expect(fetcher.fetch(`${media.url}/frame.png`, 'frame_images[0].image_url')).rejects.toBeInstanceOf(MediaUnreachableError);
      // The fetch deadline is 1 s; allow for a busy machine.
      expect(Date.now() - started).toBeLessThan(5_000);
      media.clear();
      await expectReleased(fds);
    });
  }

  it('the caller goes away mid-fetch: the fetch stops and releases its connection', async () => {
    const fds = fdCount();
    media.set(IMAGE, { kind: 'stall', after: 1000 });
    const ac = new AbortController();
    const pending = fetcher.fetch(`${media.url}/frame.png`, 'p', ac.signal);
    setTimeout(() => ac.abort(), 100);
    await expect(pending).rejects.toMatchObject({ reason: 'aborted' });
    media.clear();
    await expectReleased(fds);
  });
});
