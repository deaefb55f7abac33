import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimServer, type SimReply } from '../../../src/sim/framework.js';
import { samplePng } from '../../../src/sim/media.js';
import { videoModule as veo } from '../../../src/video/vendors/veo/index.js';
import { call, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../../helpers/video.js';

/** Media the gateway fetches for Vertex, through the whole gateway, over real HTTP. */
let sim: SimServer;
let images: SimServer;
let gw: TestGateway;
let model: string;

beforeAll(async () => {
  sim = await veo.simulator.start({ taskMs: 100 });
  images = await SimServer.start('images', (req): SimReply =>
    req.path === '/frame.png' ? { headers: { 'content-type': 'image/png' }, body: samplePng() } : { status: 404, json: {} });
  gw = await startTestGateway(upstreamsFor([{ module: veo, sim }]));
  model = veo.simulator.demo(sim).models[0]!.name;
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([sim?.close(), images?.close()]);
});

const creates = () => sim.received('POST', /:predictLongRunning$/);

describe('Veo media through the gateway', () => {
  it('fetches a first frame given by hostname URL and sends it to Vertex as base64', async () => {
    const { key } = await gw.newKey();
    const url = `http://localhost:${new URL(images.url).port}/frame.png`;
    const r = await call(gw, 'POST', '/v1/videos/generations', {
      key,
      body: { model, prompt: 'the frame comes alive', frame_images: [{ image_url: url, frame_type: 'first_frame' }], generate_audio: false },
    });
    expect(r.status, r.text).toBe(200);
    const sent = creates().at(-1)!.json;
    expect(sent.instances[0].image).toEqual({ bytesBase64Encoded: samplePng().toString('base64'), mimeType: 'image/png' });
    // The snake_case alias was accepted (not refused as another vendor's name) and converted.
    expect(sent.parameters.generateAudio).toBe(false);
    expect(sent.parameters.generate_audio).toBeUndefined();
  });

  it('merges a native parameters object with the derived one, and native camelCase wins over standard and alias', async () => {
    const { key } = await gw.newKey();
    const r = await call(gw, 'POST', '/v1/videos/generations', {
      key,
      body: { model, prompt: 'x', seconds: 4, aspect_ratio: '9:16', durationSeconds: 6, sample_count: 2, sampleCount: 1, parameters: { fps: 24, aspectRatio: '16:9' }, brandNewKnob: 'y' },
    });
    expect(r.status, r.text).toBe(200);
    const p = creates().at(-1)!.json.parameters;
    expect(p.fps).toBe(24); // native nested field kept
    expect(p.aspectRatio).toBe('16:9'); // native nested value wins over the derived one
    expect(p.durationSeconds).toBe(6); // native name wins over `seconds`
    expect(p.sampleCount).toBe(1); // camelCase wins over its snake_case alias
    expect(p.sample_count).toBeUndefined();
    expect(p.brandNewKnob).toBe('y'); // unknown natives go into parameters
  });

  it('an unreachable image is a processing job that fails with invalid_media and costs nothing', async () => {
    const { key, account } = await gw.newKey(50);
    const before = creates().length;
    const url = `http://localhost:${new URL(images.url).port}/missing.png`;
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'x', frame_images: [{ image_url: url }] } });
    expect(r.status, r.text).toBe(200);
    expect(r.json.status).toBe('processing');
    const done = await pollUntilDone(gw, key, r.json.id);
    expect(done.status).toBe('failed');
    expect(done.error.code).toBe('invalid_media');
    expect(creates().length).toBe(before);
    expect(await gw.balance(account)).toBe(50_000_000);
  });

  it('refuses a private address when private networks are not allowed (400, nothing held)', async () => {
    const strict = await startTestGateway({ ...upstreamsFor([{ module: veo, sim }]), video: { media: { allow_private_networks: false } } });
    try {
      const { key, account } = await strict.newKey(50);
      const r = await call(strict, 'POST', '/v1/videos/generations', {
        key,
        body: { model, prompt: 'x', frame_images: [{ image_url: `http://127.0.0.1:${new URL(images.url).port}/frame.png` }] },
      });
      expect(r.status).toBe(400);
      expect(r.json.error).toMatchObject({ code: 'invalid_media', param: 'frame_images[0].image_url' });
      expect(await strict.balance(account)).toBe(50_000_000);
    } finally {
      await strict.close();
    }
  });
});
