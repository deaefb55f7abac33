import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4 } from '../../src/sim/media.js';
import { SORA_SECONDS } from '../../src/video/vendors/sora/adapter.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/** Per-model video capabilities: declared by the vendor folder, overridable in config, enforced at create. */
let gw: TestGateway;
let sims: SimServer[];

beforeAll(async () => {
  sims = [await sora.simulator.start({ taskMs: 100 }), await wan.simulator.start({ taskMs: 100 })];
  const cfg = upstreamsFor([{ module: sora, sim: sims[0]! }, { module: wan, sim: sims[1]! }]);
  // The operator narrows sora-2-pro to short clips and turns its remix and edits off.
  (cfg.models['sora-2-pro'] as Record<string, unknown>).video = { durations: [4, 8], remix: false, edit: false };
  gw = await startTestGateway(cfg);
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(sims.map((s) => s.close()));
});

describe('video capabilities', () => {
  it('GET /v1/models/{id} carries what the model accepts, with its price per second', async () => {
    const { key } = await gw.newKey();
    const r = await call(gw, 'GET', '/v1/models/sora-2', { key });
    expect(r.status).toBe(200);
    expect(r.json.video).toEqual({
      // The adapter's own list: what the model shows and what the adapter accepts are one table.
      durations: [...SORA_SECONDS],
      default_seconds: 4,
      sizes: ['720x1280', '1280x720', '1024x1792', '1792x1024', '1920x1080', '1080x1920'],
      default_size: '720x1280',
      first_frame: true,
      last_frame: false,
      references: false,
      audio: true,
      remix: true,
      edit: true,
      extend: true,
      characters: true,
      cancel: false,
      variants: ['video', 'thumbnail', 'spritesheet'],
      content_ttl_seconds: 3600,
      price_per_second: 0.1,
    });
    const wanI2v = await call(gw, 'GET', '/v1/models/wan2.6-i2v', { key });
    expect(wanI2v.json.video).toMatchObject({ first_frame: true, cancel: true, remix: false });
    const wanT2v = await call(gw, 'GET', '/v1/models/wan2.6-t2v', { key });
    expect(wanT2v.json.video).toMatchObject({ first_frame: false });
    const list = await call(gw, 'GET', '/v1/models', { key });
    expect(list.json.data.every((m: { video?: unknown }) => m.video !== undefined)).toBe(true);
  });

  it('the config override is what the model shows and what create enforces, before any upstream call', async () => {
    const { key, account } = await gw.newKey(10);
    const r = await call(gw, 'GET', '/v1/models/sora-2-pro', { key });
    expect(r.json.video).toMatchObject({ durations: [4, 8], remix: false });
    sims[0]!.reset();
    const refused = await call(gw, 'POST', '/v1/videos', { key, body: { model: 'sora-2-pro', prompt: 'x', seconds: '12' } });
    expect(refused.status).toBe(400);
    expect(refused.json.error).toMatchObject({ type: 'invalid_request_error', param: 'seconds' });
    expect(sims[0]!.received('POST', '/v1/videos')).toHaveLength(0);
    expect(await gw.balance(account)).toBe(10_000_000);
    const ok = await call(gw, 'POST', '/v1/videos', { key, body: { model: 'sora-2-pro', prompt: 'x', seconds: '8' } });
    expect(ok.status, ok.text).toBe(200);
  });

  it('an operation the override turns off is 400 operation_unsupported, though the vendor offers it', async () => {
    const { key, account } = await gw.newKey(10);
    sims[0]!.reset();
    const form = new FormData();
    form.append('prompt', 'x');
    form.append('model', 'sora-2-pro');
    form.append('video', new Blob([new Uint8Array(sampleMp4())], { type: 'video/mp4' }), 'clip.mp4');
    const res = await fetch(`${gw.url}/v1/videos/edits`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: object }).error).toMatchObject({ code: 'operation_unsupported', param: 'model' });
    expect(sims[0]!.received('POST', '/v1/videos/edits')).toHaveLength(0);
    expect(await gw.balance(account)).toBe(10_000_000);
  });

  it('a first frame for a model that takes none is a 400, and the upload is not kept', async () => {
    const { key } = await gw.newKey(10);
    const r = await call(gw, 'POST', '/v1/videos', { key, body: { model: 'wan2.6-t2v', prompt: 'x', input_reference: { image_url: 'https://example.com/a.png' } } });
    expect(r.status).toBe(400);
    expect(r.json.error.type).toBe('invalid_request_error');
  });
});
