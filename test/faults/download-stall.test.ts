import { readdirSync, readlinkSync } from 'node:fs';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import type { TestGateway } from '../helpers/gateway.js';
import { eventually, httpCall } from './client.js';
import { largeStoredCopy, storedBlobName, storedVideo } from './stored-video.js';

/**
 * A client that stops reading a download. The gateway keeps the video in its local blob store (the
 * default), so the download holds a file descriptor; once the client stops taking bytes and every
 * buffer between them is full, `server.download_stall_ms` later the connection is cut and the file
 * closed. A slow client that still reads is left alone.
 */
const BIG = 48 * 1024 * 1024;
/**
 * The gateway runs in this process. A slow reader's pause (40% of this) is its own timer, the
 * gateway's stall its timer: if the process is held past the stall's due time, both run in one turn,
 * before any byte moves, and the download is cut though the reader resumed first. The longer the
 * stall limit, the longer a hold it takes.
 */
const STALL_MS = 1_500;
let sim: SimServer;
let gw: TestGateway;
let key: string;
let jobId: string;
let blobName: string;

beforeAll(async () => {
  ({ sim, gw, key, jobId } = await storedVideo({ server: { download_stall_ms: STALL_MS } }));
  // A stored copy larger than every socket buffer on the way, so a client that stops reading stalls it.
  blobName = await storedBlobName({ sim, gw, key, jobId });
  await gw.services.video.deps.blobs.put(blobName, largeStoredCopy(BIG), 'video/mp4');
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

/** This process's descriptors open on the stored video. */
function blobFds(): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).endsWith(blobName)) n++;
    } catch {
      // closed between the listing and the read
    }
  }
  return n;
}

/** Downloads the video, handing the response to `onResponse` to read it as it likes; resolves when it closes. */
function download(onResponse: (res: import('node:http').IncomingMessage) => void): Promise<{ received: number; complete: boolean; ms: number }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = request(`${gw.url}/v1/videos/${jobId}/content`, { headers: { authorization: `Bearer ${key}`, connection: 'close' }, agent: false }, (res) => {
      let received = 0;
      res.on('data', (c: Buffer) => (received += c.length));
      res.on('error', () => undefined);
      res.on('close', () => resolve({ received, complete: res.complete, ms: Date.now() - started }));
      onResponse(res);
    });
    req.setTimeout(30_000, () => req.destroy(new Error('the download was never cut')));
    req.on('error', reject);
    req.end();
  });
}

describe('a client that stops reading a download', () => {
  it('is cut after download_stall_ms, and the stored file is closed', async () => {
    let sawFd = false;
    let closedWhilePaused = false;
    const r = await download((res) => {
      res.once('data', () => {
        res.pause();
        sawFd = blobFds() > 0;
        // A paused client reads nothing, the end of the connection included: look at the gateway's
        // side while paused, then read on to see how the download ended.
        void eventually(() => blobFds() === 0, 10_000).then((closed) => {
          closedWhilePaused = closed;
          res.resume();
        });
      });
    });
    expect(sawFd, 'the download had the stored file open').toBe(true);
    expect(closedWhilePaused, 'the stored file was closed while the client was paused').toBe(true);
    expect(r.complete).toBe(false);
    expect(r.received).toBeLessThan(BIG);
    expect((await httpCall(`${gw.url}/health`)).status).toBe(200);
  }, 40_000);

  it('a slow client that keeps reading gets the whole video', async () => {
    // Stops after every 8 MB for 40% of the stall limit, long enough to fill every buffer on the
    // way: the download lasts several stall periods in all, and no single pause is cut.
    let pauses = 0;
    const r = await download((res) => {
      let sincePause = 0;
      res.on('data', (c: Buffer) => {
        sincePause += c.length;
        if (sincePause < 8 * 1024 * 1024) return;
        sincePause = 0;
        pauses++;
        res.pause();
        setTimeout(() => res.resume(), STALL_MS * 0.4);
      });
    });
    expect(pauses).toBeGreaterThanOrEqual(5);
    expect(r.ms).toBeGreaterThan(STALL_MS * 2);
    expect(r.complete, `received ${r.received} of ${BIG}`).toBe(true);
    expect(r.received).toBe(BIG);
  }, 40_000);
});
