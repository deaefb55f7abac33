import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Naming an uploaded file's type is bounded work: 64 MiB that start like a JPEG and hold nothing
 * but zeros used to be handed whole to a header sniffer, which walked it a byte at a time and held
 * the event loop (every other request with it) for about 8 s. The gateway here shares its loop
 * with the test, so a timer ticking alongside the upload sees any such stall.
 */
const MIB = 1024 * 1024;
/**
 * As in the /health checks under load (test/app/health-under-load.test.ts): a second. Copying
 * 64 MiB in and out of buffers alone holds the loop some tens of milliseconds, a few hundred on a
 * busy machine; the sniffer held it for seconds.
 */
const HELD_LIMIT_MS = 1_000;

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ server: { max_inflight_body_bytes: 80 * MIB } });
});
afterAll(async () => {
  await gw?.close();
});

/** Runs `work` with a timer ticking every 5 ms; its result and the longest gap between two ticks. */
async function longestStall<T>(work: () => Promise<T>): Promise<{ result: T; stallMs: number }> {
  let last = performance.now();
  let stallMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 5);
  try {
    const result = await work();
    return { result, stallMs: Math.max(stallMs, performance.now() - last) };
  } finally {
    clearInterval(timer);
  }
}

/**
 * POSTs a prepared multipart body through node:http, which writes the buffer as it is (a fetch of
 * a FormData copies it, holding the loop itself for a few hundred milliseconds).
 */
function postForm(path: string, key: string, body: Buffer): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'multipart/form-data; boundary=B', 'content-length': body.length };
    const req = request(`${gw.url}${path}`, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString()) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('POST /v1/files names the type of a large file without walking it', () => {
  it('a 64 MiB file of zeros behind a JPEG marker is stored, and the event loop is never held long', async () => {
    const { key } = await gw.newKey(100);
    const bytes = Buffer.alloc(64 * MIB - 1024);
    bytes.set([0xff, 0xd8, 0xff, 0xe0]);
    const body = Buffer.concat([
      Buffer.from('--B\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nuser_data\r\n'),
      Buffer.from('--B\r\nContent-Disposition: form-data; name="file"; filename="bomb.jpg"\r\nContent-Type: image/jpeg\r\n\r\n'),
      bytes,
      Buffer.from('\r\n--B--\r\n'),
    ]);

    const { result, stallMs } = await longestStall(() => postForm('/v1/files', key, body));
    expect(result.status, JSON.stringify(result.json)).toBe(200);
    expect(result.json).toMatchObject({ object: 'file', bytes: bytes.length, filename: 'bomb.jpg', status: 'processed' });
    expect(stallMs).toBeLessThan(HELD_LIMIT_MS);
  }, 60_000);
});
