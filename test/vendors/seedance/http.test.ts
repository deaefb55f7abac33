import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/core/json.js';
import { sampleMp4 } from '../../../src/sim/media.js';
import type { CreateInput, StandardVideoRequest } from '../../../src/video/types.js';
import { videoModule } from '../../../src/video/vendors/seedance/index.js';
import { overHttp } from '../../kit/over-http.js';

const vendor = videoModule.vendor;
const PRO15 = 'doubao-seedance-1-5-pro-251215';
const PRO10 = 'doubao-seedance-1-0-pro-250528';
const V20 = 'doubao-seedance-2-0-260128';
const TASKS = '/api/v3/contents/generations/tasks';

const t = overHttp(videoModule, { apiKey: 'ark-sim-key', statusOf: (j) => j.status });
const { create, settle } = t;

function input(model: string, s: Partial<StandardVideoRequest> = {}, native: JsonObject = {}): CreateInput {
  const std: StandardVideoRequest = { model, prompt: 'waves at dusk', frameImages: [], inputReferences: [], sent: { size: false, resolution: false, aspectRatio: false }, ...s };
  return { model, upstreamModel: model, std, native, media: new Map() };
}


describe('seedance over real HTTP against the Ark simulator', () => {
  it('create -> queued/running/succeeded -> MP4 bytes, with usage tokens and the actual duration', async () => {
    const ci = input(PRO15, { seconds: 6, resolution: 720, aspectRatio: '16:9', frameImages: [{ url: 'https://img.example/f.png', frameType: 'first_frame' }] }, { camera_fixed: false, return_last_frame: true });
    // Long enough that the first poll lands before the end, so the intermediate states are observed.
    t.sim.settings.taskMs = 400;
    const task = await create(ci);
    const sent = t.sim.lastReceived('POST', TASKS)!;
    expect(sent.headers['authorization']).toBe('Bearer ark-sim-key');
    expect(sent.json).toEqual({
      model: PRO15,
      content: [
        { type: 'text', text: 'waves at dusk' },
        { type: 'image_url', image_url: { url: 'https://img.example/f.png' }, role: 'first_frame' },
      ],
      resolution: '720p',
      ratio: '16:9',
      duration: 6,
      camera_fixed: false,
      return_last_frame: true,
    });
    const { final, seen } = await settle(task);
    expect(seen.has('queued') || seen.has('running')).toBe(true);
    if (final.state !== 'completed') throw new Error(`expected completion, got ${JSON.stringify(final)}`);
    expect(final.seconds).toBe(6);
    // 1280 x 720 x 24 fps x 6 s / 1024
    expect(final.usage).toEqual({ completion_tokens: 129600, total_tokens: 129600 });
    expect(final.vendorData).toMatchObject({ sim_trace_id: expect.stringMatching(/^trace-/), framespersecond: 24, duration: 6 });
    expect((final.vendorData.content as JsonObject).last_frame_url).toMatch(/X-Tos-Signature=/);
    const dl = await t.ex.sendRaw(vendor.buildContent(task, final.outputs[0]!, t.up), 5000);
    expect(dl.status).toBe(200);
    expect(dl.raw.equals(sampleMp4())).toBe(true);
  });

  it('frames win over seconds: only frames is sent and seconds come from frames / framespersecond', async () => {
    const task = await create(input(PRO10, { seconds: 5 }, { frames: 121 }));
    const sent = t.sim.lastReceived('POST', TASKS)!.json;
    expect(sent.frames).toBe(121);
    expect(sent.duration).toBeUndefined();
    const { final } = await settle(task);
    expect(final.state === 'completed' && final.seconds).toBeCloseTo(121 / 24, 6);
  });

  it('duration -1 on 1.5 pro: held at the maximum, billed at what the model chose', async () => {
    const ci = input(PRO15, {}, { duration: -1 });
    expect(vendor.estimateSeconds(ci)).toBe(12);
    const task = await create(ci);
    const { final } = await settle(task);
    expect(final.state === 'completed' && final.seconds).toBe(8);
  });

  it('2.0 takes image, video and audio references; Ark accepts them', async () => {
    const task = await create(
      input(V20, {
        inputReferences: [
          { type: 'image', url: 'https://r.example/a.png' },
          { type: 'video', url: 'https://r.example/b.mp4' },
          { type: 'audio', url: 'https://r.example/c.mp3' },
        ],
      }),
    );
    const roles = (t.sim.lastReceived('POST', TASKS)!.json.content as JsonObject[]).map((c) => c.role ?? c.type);
    expect(roles).toEqual(['text', 'reference_image', 'reference_video', 'reference_audio']);
    const { final } = await settle(task);
    expect(final.state).toBe('completed');
  });

  it('failures: each marker maps to its stable code; the vendor error stays in vendor_data', async () => {
    const cases: [string, string, string][] = [
      ['[moderation]', 'content_policy_violation', 'OutputVideoSensitiveContentDetected'],
      ['[bad-image]', 'invalid_media', 'InvalidImageURL'],
      ['[bad-combo]', 'unsupported_parameters', 'InvalidParameter'],
      ['[fail]', 'generation_failed', 'InternalServiceError'],
    ];
    for (const [marker, code, vendorCode] of cases) {
      const { final } = await settle(await create(input(PRO10, { prompt: `sea ${marker}` })));
      expect(final).toMatchObject({ state: 'failed', code });
      expect((final.vendorData.error as JsonObject).code).toBe(vendorCode);
    }
    const { final } = await settle(await create(input(PRO10, { prompt: 'slow [expire]' })));
    expect(final).toMatchObject({ state: 'failed', code: 'expired' });
  });

  it('DELETE on a queued task cancels it', async () => {
    t.sim.settings.taskMs = 2000;
    const task = await create(input(PRO10));
    const del = await t.ex.send({ method: 'DELETE', url: `${t.sim.url}${TASKS}/${task.taskId}`, headers: { authorization: `Bearer ${t.up.apiKey}` } }, 5000);
    expect(del.status).toBe(200);
    const { final } = await settle(task);
    expect(final).toMatchObject({ state: 'failed', code: 'cancelled' });
  });

  it('Ark error envelopes classify: input moderation, bad param, 1.5-only options, wrong key, unknown task', async () => {
    const mod = await t.ex.send(vendor.buildCreate(input(PRO10, { prompt: 'x [moderation-input]' }), t.up), 5000);
    expect(mod.status).toBe(400);
    expect(vendor.classifyError(mod)).toMatchObject({ kind: 'moderation', code: 'InputTextSensitiveContentDetected' });

    const badRatio = await t.ex.send(vendor.buildCreate(input(PRO10, { aspectRatio: '5:2' }), t.up), 5000);
    expect(vendor.classifyError(badRatio)).toMatchObject({ kind: 'client', status: 400, code: 'InvalidParameter', param: 'ratio' });

    // What validate() rejects locally, Ark rejects too (proving the rule matches the vendor).
    const auto = await t.ex.send(vendor.buildCreate(input(PRO10, {}, { duration: -1 }), t.up), 5000);
    expect(vendor.classifyError(auto)).toMatchObject({ kind: 'client', param: 'duration' });

    const wrong = await t.ex.send(vendor.buildCreate(input(PRO10), { ...t.up, apiKey: 'not-the-key' }), 5000);
    expect(wrong.status).toBe(401);
    expect(vendor.classifyError(wrong)).toMatchObject({ kind: 'auth', status: 401 });

    const missing = await t.ex.send(vendor.buildPoll({ taskId: 'cgt-nope', model: PRO10, upstreamModel: PRO10, meta: {} }, t.up), 5000);
    expect(vendor.classifyError(missing)).toMatchObject({ kind: 'client', status: 404, code: 'ResourceNotFound' });
  });

  it('injected 429/500 are retryable; the result URL serves Range and refuses our key', async () => {
    t.sim.inject({ kind: 'status', status: 429, json: { error: { code: 'ServerOverloaded', message: 'busy', type: 'TooManyRequests' } }, headers: { 'retry-after': '4' } });
    const r = await t.ex.send(vendor.buildCreate(input(PRO10), t.up), 5000);
    expect(vendor.classifyError(r)).toEqual({ kind: 'retryable', status: 429, message: 'busy', retryAfterSeconds: 4 });

    const { final } = await settle(await create(input(PRO10)));
    if (final.state !== 'completed') throw new Error('expected completion');
    const req = vendor.buildContent({ taskId: 'x', model: PRO10, upstreamModel: PRO10, meta: {} }, final.outputs[0]!, t.up);
    const size = sampleMp4().length;
    const tail = await t.ex.sendRaw({ ...req, headers: { range: 'bytes=-64' } }, 5000);
    expect(tail.status).toBe(206);
    expect(tail.headers['content-range']).toBe(`bytes ${size - 64}-${size - 1}/${size}`);
    expect(tail.raw.equals(sampleMp4().subarray(size - 64))).toBe(true);
    const leaky = await t.ex.sendRaw({ ...req, headers: { authorization: `Bearer ${t.up.apiKey}` } }, 5000);
    expect(leaky.status).toBe(400);
  });

  it('serves a large synthetic body when videoBytes is set', async () => {
    t.sim.settings.videoBytes = 2 * 1024 * 1024 + 5;
    try {
      const { final } = await settle(await create(input(PRO10)));
      if (final.state !== 'completed') throw new Error('expected completion');
      const s = await t.ex.stream(vendor.buildContent({ taskId: 'x', model: PRO10, upstreamModel: PRO10, meta: {} }, final.outputs[0]!, t.up), 5000);
      let total = 0;
      for await (const chunk of s.body) total += (chunk as Buffer).length;
      expect(total).toBe(2 * 1024 * 1024 + 5);
    } finally {
      delete t.sim.settings.videoBytes;
    }
  });
});
