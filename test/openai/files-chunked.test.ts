import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Multipart uploads sent with Transfer-Encoding: chunked (clients streaming a file of unknown
 * length): they complete whatever their size, and one the client breaks off, or frames badly,
 * leaves the process serving. The plugin reads these uploads from the raw request, so nothing in
 * the body path may wait for, or fail on, a stream of its own that nobody reads.
 */
let gw: TestGateway;
let port: number;
let key: string;

beforeAll(async () => {
  gw = await startTestGateway({});
  port = Number(new URL(gw.url).port);
  ({ key } = await gw.newKey(100));
});
afterAll(async () => {
  await gw?.close();
});

/** Sends raw bytes, then either waits for the answer's head or hangs up after `hangUpMs`. */
function raw(parts: string[], hangUpMs?: number): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    let out = '';
    s.on('data', (d) => {
      out += d.toString('latin1');
      if (hangUpMs === undefined && /\r\n\r\n/.test(out) && !out.startsWith('HTTP/1.1 100')) {
        s.destroy();
        resolve(out);
      }
    });
    s.on('error', () => undefined);
    s.on('close', () => resolve(out));
    for (const p of parts) s.write(p);
    if (hangUpMs !== undefined) setTimeout(() => s.destroy(), hangUpMs);
  });
}

const chunk = (text: string) => `${Buffer.byteLength(text, 'latin1').toString(16)}\r\n${text}\r\n`;
const head = (auth = true) =>
  `POST /v1/files HTTP/1.1\r\nHost: gw\r\n${auth ? `Authorization: Bearer ${key}\r\n` : ''}Content-Type: multipart/form-data; boundary=B\r\nTransfer-Encoding: chunked\r\n\r\n`;

describe('chunked multipart uploads', () => {
  it('completes an upload of 200 KB sent in chunks', async () => {
    const body =
      '--B\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nuser_data\r\n' +
      '--B\r\nContent-Disposition: form-data; name="file"; filename="blob.bin"\r\nContent-Type: application/octet-stream\r\n\r\n' +
      'x'.repeat(200 * 1024) +
      '\r\n--B--\r\n';
    const parts = [head()];
    for (let i = 0; i < body.length; i += 8 * 1024) parts.push(chunk(body.slice(i, i + 8 * 1024)));
    parts.push('0\r\n\r\n');
    const answer = await raw(parts);
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer).toContain('"bytes":204800');
  }, 30_000);

  it('keeps serving after uploads broken off mid-body or framed badly', async () => {
    for (let i = 0; i < 5; i++) {
      await raw([head(), chunk('--B\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\n' + 'y'.repeat(40_000))], 100);
      await raw([head(), 'zz\r\nhello\r\n0\r\n\r\n'], 200);
    }
    await new Promise((r) => setTimeout(r, 300));
    const res = await fetch(`${gw.url}/health`);
    expect(res.status).toBe(200);
  }, 30_000);
});
