import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatSimStats } from '../../src/sim/openai-chat.js';
import { abortAfter, eventually, httpCall, rawExchange } from './client.js';
import { expectClean, expectErrorShape, snapshot, startFaultEnv, VIDEO_BYTES, type FaultEnv } from './env.js';

/**
 * Faults on the client's side: connections cut mid-download, mid-stream and mid-upload, odd Range
 * headers, and a request head that trickles in. Same checks as the upstream faults: the answer,
 * the process alive, no socket or descriptor left open, no money moved.
 */
let env: FaultEnv;

beforeAll(async () => {
  env = await startFaultEnv({ headersTimeoutMs: 1_000 });
  expect((await httpCall(`${env.gw.url}/v1/videos/${env.job.id}/content`, { key: env.key })).status).toBe(200);
}, 60_000);
afterAll(async () => env?.stop());

const contentUrl = () => `${env.gw.url}/v1/videos/${env.job.id}/content`;

describe('the client goes away', () => {
  it('mid-download: the upstream download is released at once', async () => {
    const before = await snapshot(env);
    const r = await abortAfter(contentUrl(), { key: env.key, afterBytes: 64 * 1024 });
    expect(r.status).toBe(200);
    expect(r.received).toBeLessThan(VIDEO_BYTES);
    await expectClean(env, before);
  });

  it('mid-download of a range the gateway slices: both ends of the slice are released', async () => {
    const before = await snapshot(env);
    // Through the signed link, with a range (the simulator serves it; the gateway forwards).
    const r = await abortAfter(env.job.outputUrl, { headers: { range: 'bytes=100-' }, afterBytes: 32 * 1024 });
    expect(r.status).toBe(206);
    await expectClean(env, before);
  });

  it('mid-stream (chat SSE): the upstream stream is cancelled', async () => {
    env.apiSim.settings.chatChunkDelayMs = 30;
    try {
      const before = await snapshot(env);
      const cancelled = chatSimStats(env.apiSim).streamsCancelled;
      const body = { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'a long story please' }] };
      const r = await abortAfter(`${env.gw.url}/v1/chat/completions`, { key: env.key, body, afterBytes: 1 });
      expect(r.status).toBe(200);
      expect(await eventually(() => chatSimStats(env.apiSim).streamsCancelled === cancelled + 1)).toBe(true);
      // Tokens already generated are billed (see the chat tests); here only the release matters.
      await expectClean(env, before, { charged: true });
    } finally {
      env.apiSim.settings.chatChunkDelayMs = 0;
    }
  });

  it('mid-upload: nothing reaches the upstream and nothing is charged', async () => {
    const before = await snapshot(env);
    const seen = env.api.received.length;
    const port = Number(new URL(env.gw.url).port);
    const head =
      'POST /v1/embeddings HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n' +
      `Authorization: Bearer ${env.key}\r\nContent-Length: 200000\r\n\r\n`;
    const { connect } = await import('node:net');
    await new Promise<void>((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.write(head + '{"model":"text-embedding-3-small","input":"' + 'x'.repeat(5_000));
        setTimeout(() => {
          s.destroy();
          resolve();
        }, 100);
      });
      s.on('error', () => undefined);
    });
    await expectClean(env, before);
    expect(env.api.received.length).toBe(seen);
  });
});

describe('Range headers', () => {
  it('past the end, in every spelling: 416 with the size, the process lives', async () => {
    const before = await snapshot(env);
    for (const range of ['bytes=99999999-', `bytes=${VIDEO_BYTES}-`, 'bytes=99999999999999999999999-', 'bytes=-0', 'bytes=5-1']) {
      const r = await httpCall(contentUrl(), { key: env.key, headers: { range } });
      expect(r.status, range).toBe(416);
      expectErrorShape(r.json, 'invalid_request_error', 'range_not_satisfiable');
      expect(r.headers['content-range'], range).toBe(`bytes */${VIDEO_BYTES}`);
    }
    await new Promise((res) => setTimeout(res, 100));
    await expectClean(env, before);
  });

  it('malformed or multi-range: the whole video (RFC 9110 lets a server ignore them)', async () => {
    const before = await snapshot(env);
    for (const range of ['bytes=abc', 'items=0-1', 'bytes=0-1,3-4', 'bytes=-', 'bytes= 1-2 3', 'bytes=1-2-3']) {
      const r = await httpCall(contentUrl(), { key: env.key, headers: { range } });
      expect(r.status, range).toBe(200);
      expect(r.body.length, range).toBe(VIDEO_BYTES);
    }
    await expectClean(env, before);
  });

  it('a satisfiable range still works after all that: 206 with exactly those bytes', async () => {
    const r = await httpCall(contentUrl(), { key: env.key, headers: { range: 'bytes=10-19' } });
    expect(r.status).toBe(206);
    expect(r.body.length).toBe(10);
    expect(r.headers['content-range']).toBe(`bytes 10-19/${VIDEO_BYTES}`);
  });
});

describe('slow headers', () => {
  it('a request head trickling in is answered 408 and closed at server.headers_timeout_ms, while others are served', async () => {
    const before = await snapshot(env);
    const port = Number(new URL(env.gw.url).port);
    const chunks = ['GET /health HTTP/1.1\r\n', 'Host: gw\r\n', ...Array.from({ length: 40 }, (_, i) => `X-Slow-${i}: 1\r\n`)];
    const slow = rawExchange(port, chunks, 200);
    // Meanwhile the gateway answers everyone else.
    await new Promise((r) => setTimeout(r, 300));
    expect((await httpCall(`${env.gw.url}/health`)).status).toBe(200);
    const r = await slow;
    expect(r.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(r.text).toContain('"code":"request_timeout"');
    // The limit is 1 s, checked every second.
    expect(r.closedAfterMs).toBeLessThan(4_000);
    await expectClean(env, before);
  });
});
