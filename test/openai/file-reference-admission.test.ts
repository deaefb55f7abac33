import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { StoreUnavailableError } from '../../src/core/errors.js';
import type { SimServer } from '../../src/sim/framework.js';
import { samplePng } from '../../src/sim/media.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { PRICE_PER_SECOND, upstreamsFor } from '../helpers/video.js';

/**
 * A create with `input_reference: {file_id}` is admitted by the video rate limit before its stored
 * file is read, that is before the create's own checks. A create those checks refuse did no work,
 * and was never counted when the create admitted for itself: the early admission goes back for
 * every refusal up to the point where the create would have admitted, whatever its status (a 503
 * for a model no video upstream serves, or for the store), and only a create that went further
 * (to the vendor) keeps counting.
 */
const ONLY_EMBEDDINGS = 'video-on-an-embeddings-upstream';
let sim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  sim = await wan.simulator.start({ taskMs: 60_000 });
  const { upstreams, models } = upstreamsFor([{ module: wan, sim }]);
  gw = await startTestGateway({
    // A video model whose only upstream is of an embeddings vendor: no video upstream serves it.
    upstreams: [...upstreams, { name: 'embeddings-up', vendor: 'openai', base_url: sim.url, api_key: 'sk-test', models: [ONLY_EMBEDDINGS] }],
    models: { ...models, [ONLY_EMBEDDINGS]: { capabilities: ['video'], price: { per_second: PRICE_PER_SECOND } } },
  });
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});
afterEach(() => {
  vi.restoreAllMocks();
});

async function uploadFrame(key: string): Promise<string> {
  const form = new FormData();
  form.set('purpose', 'user_data');
  form.set('file', new Blob([new Uint8Array(samplePng())]), 'frame.png');
  const res = await fetch(`${gw.url}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const json = (await res.json()) as any;
  expect(res.status, JSON.stringify(json)).toBe(200);
  return json.id;
}

const createFrom = (key: string, fileId: string, extra: Record<string, unknown> = {}) =>
  call(gw, 'POST', '/v1/videos', { key, body: { model: 'wan2.6-i2v', prompt: 'the frame comes alive', input_reference: { file_id: fileId }, ...extra }, headers: { connection: 'close' } });

/**
 * A key allowed one video request a minute, and a frame of its account uploaded by another key (an
 * upload counts against the video limit too, and would take that one request).
 */
async function oneCreateAMinute(): Promise<{ key: string; frame: string }> {
  const { key: uploader, account } = await gw.newKey(100);
  const key = await gw.createKey(account, { limits: { video: { rpm: 1 } } });
  return { key, frame: await uploadFrame(uploader) };
}

describe('a file_id create refused before the create admits', () => {
  it('503 upstream_unavailable (no video upstream serves the model) leaves the next create admitted', async () => {
    const { key, frame } = await oneCreateAMinute();
    const refused = await createFrom(key, frame, { model: ONLY_EMBEDDINGS });
    expect(refused.status, JSON.stringify(refused.json)).toBe(503);
    expect(refused.json.error).toMatchObject({ type: 'server_error', code: 'upstream_unavailable' });
    // The refusal's headers show the request given back.
    expect(refused.headers.get('x-ratelimit-remaining-requests')).toBe('1');

    const next = await createFrom(key, frame);
    expect(next.status, JSON.stringify(next.json)).toBe(200);
  });

  it('503 store_unavailable leaves the next create admitted', async () => {
    const { key, frame } = await oneCreateAMinute();
    // The per-job webhook's check is the create's last read of the store before it admits.
    vi.spyOn(gw.services.video.deps.store, 'listWebhookEndpoints').mockRejectedValueOnce(new StoreUnavailableError(new Error('connection reset')));
    const refused = await createFrom(key, frame, { gateway_webhook_url: 'https://hooks.example.com/video' });
    expect(refused.status, JSON.stringify(refused.json)).toBe(503);
    expect(refused.json.error).toMatchObject({ type: 'server_error', code: 'store_unavailable' });

    const next = await createFrom(key, frame);
    expect(next.status, JSON.stringify(next.json)).toBe(200);
  });

  it('a 400 from the create\'s validation, after the file was read, leaves the next create admitted', async () => {
    const { key, frame } = await oneCreateAMinute();
    const reads = vi.spyOn(gw.services.video.deps.files, 'bytes');
    const refused = await createFrom(key, frame, { seconds: '999' });
    expect(refused.status, JSON.stringify(refused.json)).toBe(400);
    expect(refused.json.error).toMatchObject({ type: 'invalid_request_error', param: 'seconds' });
    expect(reads).toHaveBeenCalledTimes(1);

    const next = await createFrom(key, frame);
    expect(next.status, JSON.stringify(next.json)).toBe(200);
    expect((await createFrom(key, frame)).status).toBe(429);
  });

  it('each refusal gives back one request, not more: the admissions of other creates still count', async () => {
    const { key, frame } = await oneCreateAMinute();
    expect((await createFrom(key, frame, { model: ONLY_EMBEDDINGS })).status).toBe(503);
    expect((await createFrom(key, frame)).status).toBe(200);
    const limited = await createFrom(key, frame);
    expect(limited.status, JSON.stringify(limited.json)).toBe(429);
  });
});

describe('a file_id create that reached the vendor', () => {
  it('refused by the vendor itself (400), gives back its one request, once', async () => {
    const { key, frame } = await oneCreateAMinute();
    sim.inject({ kind: 'status', status: 400, json: { code: 'InvalidParameter', message: 'The prompt is not accepted.' } }, 1, /video-synthesis$/);
    const refused = await createFrom(key, frame);
    expect(refused.status, JSON.stringify(refused.json)).toBe(400);

    expect((await createFrom(key, frame)).status).toBe(200);
    expect((await createFrom(key, frame)).status).toBe(429);
  });

  it('keeps counting when the vendor fails it', async () => {
    const { key, frame } = await oneCreateAMinute();
    const before = sim.received('POST', /video-synthesis$/).length;
    sim.inject({ kind: 'status', status: 500, json: { code: 'InternalError', message: 'try later' } }, 1, /video-synthesis$/);
    const failed = await createFrom(key, frame);
    expect(failed.status, JSON.stringify(failed.json)).toBeGreaterThanOrEqual(500);
    expect(sim.received('POST', /video-synthesis$/).length).toBe(before + 1);

    const limited = await createFrom(key, frame);
    expect(limited.status, JSON.stringify(limited.json)).toBe(429);
    expect(limited.json.error.type).toBe('rate_limit_error');
  });
});
