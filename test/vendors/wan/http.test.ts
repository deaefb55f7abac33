import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/core/json.js';
import type { UpstreamRequest } from '../../../src/http/types.js';
import { sampleMp4 } from '../../../src/sim/media.js';
import type { CreateInput, StandardVideoRequest } from '../../../src/video/types.js';
import { videoModule } from '../../../src/video/vendors/wan/index.js';
import { overHttp } from '../../kit/over-http.js';

const vendor = videoModule.vendor;
const t = overHttp(videoModule, { apiKey: 'sk-sim-wan', statusOf: (j) => (j.output as JsonObject).task_status });
const { create, settle } = t;

function input(model: string, s: Partial<StandardVideoRequest> = {}, native: JsonObject = {}): CreateInput {
  const std: StandardVideoRequest = { model, prompt: 'a paper boat on a river', frameImages: [], inputReferences: [], sent: { size: false, resolution: false, aspectRatio: false }, ...s };
  return { model, upstreamModel: model, std, native, media: new Map() };
}

async function download(req: UpstreamRequest): Promise<{ status: number; headers: Record<string, string>; bytes: Buffer }> {
  const r = await t.ex.sendRaw(req, 5000);
  return { status: r.status, headers: r.headers, bytes: r.raw };
}

describe('wan over real HTTP against the DashScope simulator', () => {
  it('t2v: create -> PENDING/RUNNING/SUCCEEDED -> the MP4 bytes, billing the native duration', async () => {
    const ci = input('wan2.6-t2v', { seconds: 5, size: { width: 1280, height: 720 }, sent: { size: true, resolution: false, aspectRatio: false } }, { duration: 10, prompt_extend: false });
    expect(vendor.estimateSeconds(ci)).toBe(10);
    // Long enough that the first poll lands before the end, so the intermediate states are observed.
    t.sim.settings.taskMs = 400;
    const task = await create(ci);
    const created = t.sim.lastReceived('POST', '/api/v1/services/aigc/video-generation/video-synthesis')!;
    expect(created.headers['x-dashscope-async']).toBe('enable');
    expect(created.headers['authorization']).toBe('Bearer sk-sim-wan');
    expect(created.json).toEqual({
      model: 'wan2.6-t2v',
      input: { prompt: 'a paper boat on a river' },
      parameters: { size: '1280*720', duration: 10, prompt_extend: false },
    });
    const { final, seen } = await settle(task);
    expect(seen.has('PENDING') || seen.has('RUNNING')).toBe(true);
    expect(final.state).toBe('completed');
    if (final.state !== 'completed') return;
    expect(final.seconds).toBe(10);
    expect(final.vendorData.sim_trace_id).toMatch(/^trace-/);
    expect((final.vendorData.usage as JsonObject).duration).toBe(10);
    const content = vendor.buildContent(task, final.outputs[0]!, t.up);
    expect(content.headers.authorization).toBeUndefined();
    const got = await download(content);
    expect(got.status).toBe(200);
    expect(got.bytes.equals(sampleMp4())).toBe(true);
  });

  it('the actual duration is the one the task reports, not the one asked for', async () => {
    const ci = input('wan2.6-t2v', { seconds: 5 }, { duration: 10 });
    t.sim.settings.taskMs = 50;
    t.sim.settings.reportSeconds = 7;
    try {
      const { final } = await settle(await create(ci));
      expect(final.state).toBe('completed');
      if (final.state !== 'completed') return;
      expect(final.seconds).toBe(7);
      expect(final.billableSeconds ?? final.seconds).toBe(7);
    } finally {
      delete t.sim.settings.reportSeconds;
    }
  });

  it('kf2v goes to the image2video path with both frame URLs; wan2.2 usage reports video_duration', async () => {
    const ci = input('wan2.2-kf2v-flash', {
      resolution: 720,
      sent: { size: false, resolution: true, aspectRatio: false },
      frameImages: [
        { url: 'https://img.example/a.png', frameType: 'first_frame' },
        { url: 'https://img.example/b.png', frameType: 'last_frame' },
      ],
    });
    const task = await create(ci);
    const created = t.sim.lastReceived('POST', '/api/v1/services/aigc/image2video/video-synthesis')!;
    expect(created.json.input).toMatchObject({ first_frame_url: 'https://img.example/a.png', last_frame_url: 'https://img.example/b.png' });
    expect(created.json.parameters).toEqual({ resolution: '720P' });
    const { final } = await settle(task);
    expect(final.state).toBe('completed');
    if (final.state !== 'completed') return;
    expect(final.seconds).toBe(5);
    expect(final.vendorData.usage).toMatchObject({ video_duration: 5, SR: 720 });
  });

  it('wan2.7 r2v bills only the output seconds although usage.duration counts the reference video', async () => {
    const ci = input('wan2.7-r2v', { seconds: 6, resolution: 1080, sent: { size: false, resolution: true, aspectRatio: false }, inputReferences: [{ type: 'video', url: 'https://v.example/ref.mp4' }] });
    const task = await create(ci);
    const { final } = await settle(task);
    expect(final.state === 'completed' && final.seconds).toBe(6);
    expect(final.vendorData.usage).toMatchObject({ duration: 9, output_video_duration: 6 });
  });

  it('prompt markers end as the stable failure codes, with the vendor code kept', async () => {
    const cases: [string, string, string][] = [
      ['[moderation]', 'content_policy_violation', 'DataInspectionFailed'],
      ['[bad-image]', 'invalid_media', 'InvalidParameter.DataInspection'],
      ['[bad-combo]', 'unsupported_parameters', 'InvalidParameter'],
      ['[fail]', 'generation_failed', 'InternalError.Algo'],
    ];
    for (const [marker, code, vendorCode] of cases) {
      const task = await create(input('wan2.6-t2v', { prompt: `a cat ${marker}` }));
      const { final } = await settle(task);
      expect(final).toMatchObject({ state: 'failed', code });
      expect((final.vendorData.output as JsonObject).code).toBe(vendorCode);
    }
  });

  it('input moderation at create is a DashScope 400 classified as moderation', async () => {
    const r = await t.ex.send(vendor.buildCreate(input('wan2.6-t2v', { prompt: 'x [moderation-input]' }), t.up), 5000);
    expect(r.status).toBe(400);
    expect(vendor.classifyError(r)).toMatchObject({ kind: 'moderation', code: 'DataInspectionFailed' });
  });

  it('a wrong key is a native 401 classified as auth; the async header is mandatory', async () => {
    const bad = await t.ex.send(vendor.buildCreate(input('wan2.6-t2v'), { ...t.up, apiKey: 'sk-wrong-123456' }), 5000);
    expect(bad.status).toBe(401);
    expect(bad.json).toMatchObject({ code: 'InvalidApiKey' });
    expect(vendor.classifyError(bad)).toMatchObject({ kind: 'auth', status: 401 });
    expect(vendor.classifyError(bad).message).not.toContain('sk-wrong');

    const req = vendor.buildCreate(input('wan2.6-t2v'), t.up);
    const { 'x-dashscope-async': _dropped, ...headers } = req.headers;
    const sync = await t.ex.send({ ...req, headers }, 5000);
    expect(sync.status).toBe(403);
    expect(sync.json).toMatchObject({ message: 'current user api does not support synchronous calls' });
  });

  it('a size the model family does not take is refused upstream (proving the derivation matters)', async () => {
    const r = await t.ex.send(vendor.buildCreate(input('wan2.6-i2v', { frameImages: [{ url: 'https://i/1.png', frameType: 'first_frame' }] }, { size: '1280*720' }), t.up), 5000);
    expect(r.status).toBe(400);
    expect(vendor.classifyError(r)).toMatchObject({ kind: 'client', status: 400, code: 'InvalidParameter' });
  });

  it('cancel while PENDING ends CANCELED; an unknown task id is UNKNOWN -> expired', async () => {
    t.sim.settings.taskMs = 2000;
    const task = await create(input('wan2.6-t2v'));
    const c = await t.ex.send({ method: 'POST', url: `${t.sim.url}/api/v1/tasks/${task.taskId}/cancel`, headers: { authorization: `Bearer ${t.up.apiKey}` } }, 5000);
    expect(c.status).toBe(200);
    const cancelled = await settle(task);
    expect(cancelled.final).toMatchObject({ state: 'failed', code: 'cancelled' });
    const { final } = await settle({ taskId: 'no-such-task', model: 'wan2.6-t2v', upstreamModel: 'wan2.6-t2v', meta: {} });
    expect(final).toMatchObject({ state: 'failed', code: 'expired' });
  });

  it('injected upstream trouble is classified retryable with Retry-After', async () => {
    t.sim.inject({ kind: 'status', status: 429, json: { request_id: 'r', code: 'Throttling.RateQuota', message: 'Requests rate limit exceeded' }, headers: { 'retry-after': '3' } });
    const r = await t.ex.send(vendor.buildCreate(input('wan2.6-t2v'), t.up), 5000);
    expect(vendor.classifyError(r)).toEqual({ kind: 'retryable', status: 429, message: 'Requests rate limit exceeded', retryAfterSeconds: 3 });
    t.sim.inject({ kind: 'status', status: 503, json: { request_id: 'r', code: 'InternalError', message: 'busy' } });
    const r2 = await t.ex.send(vendor.buildCreate(input('wan2.6-t2v'), t.up), 5000);
    expect(vendor.classifyError(r2)).toMatchObject({ kind: 'retryable', status: 503 });
  });

  it('the result URL honours Range and refuses a request that carries our key', async () => {
    const task = await create(input('wan2.6-t2v'));
    const { final } = await settle(task);
    if (final.state !== 'completed') throw new Error('expected completion');
    const req = vendor.buildContent(task, final.outputs[0]!, t.up);
    const part = await download({ ...req, headers: { range: 'bytes=10-109' } });
    expect(part.status).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 10-109/${sampleMp4().length}`);
    expect(part.bytes.equals(sampleMp4().subarray(10, 110))).toBe(true);
    const beyond = await download({ ...req, headers: { range: `bytes=${sampleMp4().length}-` } });
    expect(beyond.status).toBe(416);
    const leaky = await download({ ...req, headers: { authorization: `Bearer ${t.up.apiKey}` } });
    expect(leaky.status).toBe(400);
  });

  it('serves a large synthetic body when videoBytes is set', async () => {
    t.sim.settings.videoBytes = 3 * 1024 * 1024 + 17;
    const task = await create(input('wan2.6-t2v'));
    const { final } = await settle(task);
    if (final.state !== 'completed') throw new Error('expected completion');
    const s = await t.ex.stream(vendor.buildContent(task, final.outputs[0]!, t.up), 5000);
    let total = 0;
    let head: Buffer | undefined;
    for await (const chunk of s.body) {
      head ??= Buffer.from(chunk as Buffer);
      total += (chunk as Buffer).length;
    }
    expect(s.status).toBe(200);
    expect(total).toBe(3 * 1024 * 1024 + 17);
    expect(head!.subarray(0, 8).equals(sampleMp4().subarray(0, 8))).toBe(true);
  });
});
