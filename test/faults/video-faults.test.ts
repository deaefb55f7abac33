import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { httpCall } from './client.js';
import { expectClean, expectErrorShape, snapshot, startFaultEnv, VIDEO_BYTES, type FaultEnv } from './env.js';

/**
 * Faults between the gateway and a vendor while it serves a finished video: the gateway in its own
 * process, the Sora simulator behind a fault upstream. Every case checks the answer, then that the
 * process is alive, no socket or descriptor is left open and no money moved.
 */
let env: FaultEnv;
const CONTENT = /\/content$/;

beforeAll(async () => {
  env = await startFaultEnv();
  // A whole download first: the baseline of every case is a gateway that has served a video.
  const whole = await httpCall(`${env.gw.url}/v1/videos/${env.job.id}/content`, { key: env.key });
  expect(whole.status).toBe(200);
  expect(whole.body.length).toBe(VIDEO_BYTES);
}, 60_000);
afterAll(async () => env?.stop());
beforeEach(() => env.video.clear());

const download = (headers: Record<string, string> = {}) => httpCall(`${env.gw.url}/v1/videos/${env.job.id}/content`, { key: env.key, headers });

describe('video download: the upstream fails', () => {
  it('refuses the connection: 503 upstream_unavailable', async () => {
    const before = await snapshot(env);
    await env.video.refuse();
    try {
      const r = await download();
      expect(r.status).toBe(503);
      expectErrorShape(r.json, 'server_error', 'upstream_unavailable');
    } finally {
      await env.video.accept();
    }
    await expectClean(env, before);
  });

  it('resets before the headers: 502 upstream_error', async () => {
    const before = await snapshot(env);
    env.video.set(CONTENT, { kind: 'reset-before-headers' });
    const r = await download();
    expect(r.status).toBe(502);
    expectErrorShape(r.json, 'server_error', 'upstream_error');
    await expectClean(env, before);
  });

  it('never sends the headers: 504 upstream_timeout', async () => {
    const before = await snapshot(env);
    env.video.set(CONTENT, { kind: 'stall-headers' });
    const r = await download();
    expect(r.status).toBe(504);
    expectErrorShape(r.json, 'server_error', 'upstream_timeout');
    env.video.clear();
    await expectClean(env, before);
  });

  it('resets mid-body: the client gets a clean close before the announced length', async () => {
    const before = await snapshot(env);
    env.video.set(CONTENT, { kind: 'reset-mid-body', after: 256 * 1024 });
    const r = await download();
    expect(r.status).toBe(200);
    expect(r.headers['content-length']).toBe(String(VIDEO_BYTES));
    expect(r.truncated).toBe(true);
    expect(r.body.length).toBeLessThan(VIDEO_BYTES);
    await expectClean(env, before);
  });

  it('sends fewer bytes than its Content-Length: the client sees the body end short', async () => {
    const before = await snapshot(env);
    env.video.set(CONTENT, { kind: 'short-body', send: 100_000 });
    const r = await download();
    expect(r.status).toBe(200);
    expect(r.truncated).toBe(true);
    expect(r.body.length).toBeLessThanOrEqual(100_000);
    await expectClean(env, before);
  });

  it('stalls mid-body: the stall timeout ends the download instead of holding it forever', async () => {
    const before = await snapshot(env);
    env.video.set(CONTENT, { kind: 'stall', after: 64 * 1024 });
    const started = Date.now();
    const r = await download();
    expect(r.status).toBe(200);
    expect(r.truncated).toBe(true);
    // Twice the upstream's 800 ms timeout, plus scheduling on a busy machine.
    expect(Date.now() - started).toBeLessThan(10_000);
    env.video.clear();
    await expectClean(env, before);
  });

  it('stalls mid-body while slicing a range the vendor ignored: the sliced answer ends too', async () => {
    const before = await snapshot(env);
    // The vendor ignores Range (answers 200 whole), so the gateway slices; the body then stalls.
    env.video.set(CONTENT, { kind: 'stall', after: 32 * 1024, ignoreRange: true });
    const r = await download({ range: 'bytes=1000-' });
    expect(r.status).toBe(206);
    expect(r.headers['content-range']).toBe(`bytes 1000-${VIDEO_BYTES - 1}/${VIDEO_BYTES}`);
    expect(r.truncated).toBe(true);
    env.video.clear();
    await expectClean(env, before);
  });

  it('answers a redirect loop: 502 after a bounded number of hops', async () => {
    const before = await snapshot(env);
    env.video.set(CONTENT, { kind: 'redirect-loop' });
    const r = await download();
    expect(r.status).toBe(502);
    expectErrorShape(r.json, 'server_error', 'upstream_error');
    expect(env.video.hits['redirect-loop']).toBeLessThanOrEqual(6);
    await expectClean(env, before);
  });

  for (const status of [404, 410]) {
    it(`answers ${status}: 404 video_expired, with a key and through the signed link`, async () => {
      const before = await snapshot(env);
      env.video.set(CONTENT, { kind: 'answer', status, body: '{"error":{"message":"gone"}}' });
      const r = await download();
      expect(r.status).toBe(404);
      expectErrorShape(r.json, 'not_found', 'video_expired');
      const signed = await httpCall(env.job.outputUrl);
      expect(signed.status).toBe(404);
      await new Promise((res) => setTimeout(res, 100));
      await expectClean(env, before);
    });
  }

  it('answers 416 itself: 416 with the size it reported', async () => {
    const before = await snapshot(env);
    const r = await download({ range: `bytes=${VIDEO_BYTES}-` });
    expect(r.status).toBe(416);
    expectErrorShape(r.json, 'invalid_request_error', 'range_not_satisfiable');
    expect(r.headers['content-range']).toBe(`bytes */${VIDEO_BYTES}`);
    await new Promise((res) => setTimeout(res, 100));
    await expectClean(env, before);
  });

  it('answers 200 with a body that is not a video (malformed): 502 upstream_error quoting none of it, nothing breaks', async () => {
    const before = await snapshot(env);
    env.video.set(CONTENT, { kind: 'answer', status: 200, contentType: 'application/json', body: '{"this is": not json' });
    const r = await download();
    expect(r.status).toBe(502);
    expectErrorShape(r.json, 'server_error', 'upstream_error');
    expect(r.body.toString()).not.toContain('this is');
    await expectClean(env, before);
  });
});
