import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startLocalS3, type LocalS3 } from '../helpers/s3.js';
import { TcpRelay } from '../helpers/tcp-relay.js';
import { eventually, fdCount, httpCall } from './client.js';
import { largeStoredCopy, storedBlobName, storedVideo } from './stored-video.js';

/**
 * Videos kept in an S3 bucket, with S3 failing in the middle of a download: the gateway reaches S3
 * (s3rver on loopback) through a relay the test cuts while the object's body is still streaming. The
 * client sees a download that ends short (a clean close, never a 200 passed off as complete), the
 * gateway keeps serving, leaves no descriptor open, and serves the whole video again once S3 is back.
 */
const BIG = 32 * 1024 * 1024;
let s3: LocalS3;
let relay: TcpRelay;
let sim: SimServer;
let gw: TestGateway;
let key: string;
let jobId: string;

beforeAll(async () => {
  s3 = await startLocalS3('faults');
  relay = new TcpRelay(Number(new URL(s3.endpoint).port));
  await relay.start();
  // No bucket of the vendor's: the operation carries the video inline and the gateway stores it in S3.
  ({ sim, gw, key, jobId } = await storedVideo({ video: { blobs: { ...s3.config('videos/'), endpoint: `http://127.0.0.1:${relay.port}` } } }));
  // A larger stored copy, so the download is still streaming from S3 when S3 goes away.
  const name = await storedBlobName({ sim, gw, key, jobId });
  await gw.services.video.deps.blobs.put(name, largeStoredCopy(BIG), 'video/mp4');
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await sim?.close();
  await relay?.stop();
  await s3?.close();
});

/** Downloads with a client that stops reading after the first bytes until `whilePaused` is done. */
function pausedDownload(whilePaused: () => Promise<void>): Promise<{ status: number; received: number; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request(`${gw.url}/v1/videos/${jobId}/content`, { headers: { authorization: `Bearer ${key}`, connection: 'close' }, agent: false }, (res) => {
      let received = 0;
      let paused = false;
      res.on('data', (c: Buffer) => {
        received += c.length;
        if (!paused) {
          paused = true;
          res.pause();
          whilePaused().then(() => res.resume(), reject);
        }
      });
      res.on('error', () => undefined);
      res.on('close', () => resolve({ status: res.statusCode ?? 0, received, complete: res.complete }));
    });
    req.setTimeout(60_000, () => req.destroy(new Error('no end to the download')));
    req.on('error', reject);
    req.end();
  });
}

describe('S3 fails mid-download', () => {
  it('the client sees a short download, the gateway keeps serving and closes what it opened', async () => {
    const whole = await httpCall(`${gw.url}/v1/videos/${jobId}/content`, { key, timeoutMs: 60_000 });
    expect(whole.status).toBe(200);
    expect(whole.body.length).toBe(BIG);
    const fds = fdCount();

    const r = await pausedDownload(async () => {
      // S3 goes away while the gateway is still reading the object's body.
      await relay.stop();
    });
    expect(r.status).toBe(200);
    expect(r.complete, `received ${r.received} of ${BIG} bytes`).toBe(false);
    expect(r.received).toBeLessThan(BIG);
    expect((await httpCall(`${gw.url}/health`)).status).toBe(200);

    // With S3 away, the next download is an error in the spec's shape, not a hang or a crash.
    const during = await httpCall(`${gw.url}/v1/videos/${jobId}/content`, { key, timeoutMs: 60_000 });
    expect(during.status).toBeGreaterThanOrEqual(500);
    expect(during.json?.error?.type).toBe('server_error');

    await relay.start();
    const again = await httpCall(`${gw.url}/v1/videos/${jobId}/content`, { key, timeoutMs: 60_000 });
    expect(again.status).toBe(200);
    expect(again.body.length).toBe(BIG);
    let now = 0;
    expect(await eventually(() => (now = fdCount()) <= fds, 10_000), `descriptors: ${now} after, ${fds} before`).toBe(true);
  }, 120_000);
});
