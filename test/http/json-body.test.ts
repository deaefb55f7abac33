import { randomBytes } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import { describe, expect, it } from 'vitest';
import type { Json } from '../../src/core/json.js';
import { encodeJsonBody, MIN_LIFTED_CHARS } from '../../src/http/json-body.js';

/**
 * A JSON body that may carry media inline is sent from its long strings, not from a serialised copy
 * of them, and is byte for byte the text JSON.stringify would have made, with its length.
 */
const b64 = (n: number) => randomBytes(n).toString('base64');

async function sent(value: Json): Promise<{ bytes: Buffer; length: number; chunks: number[] }> {
  const body = encodeJsonBody(value);
  if (typeof body === 'string') return { bytes: Buffer.from(body), length: Buffer.byteLength(body), chunks: [] };
  const chunks: number[] = [];
  body.stream.on('data', (c: Buffer) => chunks.push(c.length));
  return { bytes: await buffer(body.stream), length: body.length, chunks };
}

describe('encodeJsonBody', () => {
  it('a body without long strings is the plain JSON text', () => {
    const value = { prompt: 'a "fox"', n: [1, 2.5, null, true], nested: { é: 'ü\u2028' } };
    expect(encodeJsonBody(value)).toBe(JSON.stringify(value));
  });

  it('long base64 and data: strings are sent from themselves, in slices, the rest as JSON.stringify writes it', async () => {
    const video = b64(3 * 1024 * 1024);
    const image = `data:image/png;base64,${b64(200_000)}`;
    const value: Json = {
      instances: [{ prompt: 'continue "this" shot \\ ünïcode', video: { bytesBase64Encoded: video, mimeType: 'video/mp4' }, image }],
      parameters: { sampleCount: 2, labels: { a: 'b' } },
      // Long, but JSON escapes it (quotes, a newline, non-ASCII): it stays in the serialised text.
      note: `"quoted"\n${'é'.repeat(MIN_LIFTED_CHARS)}`,
      tail: [video.slice(0, 10)],
    };
    const r = await sent(value);
    expect(r.bytes.equals(Buffer.from(JSON.stringify(value)))).toBe(true);
    expect(r.length).toBe(r.bytes.length);
    // No chunk holds the video's base64 whole: it goes out 64 KiB at a time.
    expect(r.chunks.length).toBeGreaterThan(video.length / (64 * 1024));
    expect(Math.max(...r.chunks)).toBeLessThan(video.length / 4);
  });

  it('a body that is one long string, or holds the same string twice', async () => {
    const s = b64(100_000);
    for (const value of [s, [s, s], { a: s, b: { c: s } }] as Json[]) {
      const r = await sent(value);
      expect(r.bytes.toString()).toBe(JSON.stringify(value));
      expect(r.length).toBe(r.bytes.length);
    }
  });

  it('a string that looks like the placeholder is sent as it is', async () => {
    const value = { a: b64(100_000), b: 'lifted-00000000000000000000000000000000-0', c: 'lifted-' };
    const r = await sent(value);
    expect(r.bytes.toString()).toBe(JSON.stringify(value));
  });
});

describe('a body sent from its strings, when the upstream goes away mid-body', () => {
  it('fails that call as a transport failure, and the next call sends a whole fresh body', async () => {
    const { createServer } = await import('node:http');
    const { Executor } = await import('../../src/http/executor.js');
    let calls = 0;
    const got: number[] = [];
    // The first request's connection is destroyed after 1 MB of its body; the second is read whole.
    const server = createServer((req, res) => {
      const n = ++calls;
      let bytes = 0;
      req.on('data', (c: Buffer) => {
        bytes += c.length;
        if (n === 1 && bytes > 1_000_000) req.socket.destroy();
      });
      req.on('end', () => {
        got.push(bytes);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/create`;
    const executor = new Executor();
    const value = { instances: [{ video: { bytesBase64Encoded: b64(3_000_000) } }] };
    const request = { method: 'POST' as const, url, headers: {}, body: value, bodyMedia: true };
    try {
      await expect(executor.send(request, 5_000)).rejects.toMatchObject({ name: 'TransportError' });
      const ok = await executor.send(request, 5_000);
      expect(ok.status).toBe(200);
      expect(got).toEqual([Buffer.byteLength(JSON.stringify(value))]);
    } finally {
      await executor.close();
      await new Promise((r) => server.close(r));
    }
  });
});
