import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import type { JsonObject } from '../../../src/core/json.js';
import { redactorFor } from '../../../src/core/redact.js';
import type { Upstream, UpstreamResponse } from '../../../src/http/types.js';
import type { CreateInput, StandardVideoRequest, TaskRef, VendorStatus } from '../../../src/video/types.js';
import { videoModule } from '../../../src/video/vendors/seedance/index.js';

const vendor = videoModule.vendor;
const PRO15 = 'doubao-seedance-1-5-pro-251215';
const PRO10 = 'doubao-seedance-1-0-pro-250528';
const LITE_I2V = 'doubao-seedance-1-0-lite-i2v-250428';
const V20 = 'doubao-seedance-2-0-260128';

const up: Upstream = {
  name: 'ark-cn',
  vendor: 'seedance',
  baseUrl: 'https://ark.cn-beijing.volces.com',
  apiKey: 'b5c6e0f2-8d1a-4c3b-9e7f-0a1b2c3d4e5f',
  models: [],
  priority: 0,
  weight: 1,
  timeoutMs: 10_000,
  options: {},
};

function input(model: string, s: Partial<StandardVideoRequest> = {}, native: JsonObject = {}, publicModel = model): CreateInput {
  const std: StandardVideoRequest = {
    model: publicModel,
    prompt: 'a cat yawns at the camera',
    frameImages: [],
    inputReferences: [],
    sent: { size: false, resolution: false, aspectRatio: false },
    ...s,
  };
  return { model: publicModel, upstreamModel: model, std, native, media: new Map() };
}

function res(status: number, json: JsonObject, headers: Record<string, string> = {}): UpstreamResponse {
  return { status, headers, json, text: JSON.stringify(json) };
}

function body(ci: CreateInput): JsonObject {
  return vendor.buildCreate(ci, up).body as JsonObject;
}

function rejectParam(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(GatewayError);
    expect((e as GatewayError).status).toBe(400);
    return (e as GatewayError).param;
  }
  throw new Error('expected a 400');
}

const refs = [
  { type: 'image', url: 'https://r/1.png', role: 'reference_image' },
  { type: 'video', url: 'https://r/2.mp4', role: 'reference_video' },
  { type: 'audio', url: 'https://r/3.mp3', role: 'reference_audio' },
];

describe('seedance buildCreate', () => {
  it('derives content[], lower-case resolution, ratio and duration; natives merge at the top level', () => {
    const req = vendor.buildCreate(
      input(
        PRO15,
        {
          seconds: 10,
          size: { width: 1280, height: 720 },
          resolution: 720,
          aspectRatio: '16:9',
          sent: { size: true, resolution: false, aspectRatio: false },
          frameImages: [
            { url: 'https://img/first.png', frameType: 'first_frame' },
            { url: 'https://img/last.png', frameType: 'last_frame' },
          ],
        },
        { camera_fixed: true, watermark: false, draft: false, callback_url: 'https://cb.example/hook', seed: 7, brand_new: { x: 1 } },
      ),
      up,
    );
    expect(req.method).toBe('POST');
    expect(req.url).toBe('https://ark.cn-beijing.volces.com/api/v3/contents/generations/tasks');
    expect(req.headers).toEqual({ authorization: 'Bearer b5c6e0f2-8d1a-4c3b-9e7f-0a1b2c3d4e5f', 'content-type': 'application/json' });
    expect(req.body).toEqual({
      model: PRO15,
      content: [
        { type: 'text', text: 'a cat yawns at the camera' },
        { type: 'image_url', image_url: { url: 'https://img/first.png' }, role: 'first_frame' },
        { type: 'image_url', image_url: { url: 'https://img/last.png' }, role: 'last_frame' },
      ],
      resolution: '720p',
      ratio: '16:9',
      duration: 10,
      camera_fixed: true,
      watermark: false,
      draft: false,
      callback_url: 'https://cb.example/hook',
      seed: 7,
      brand_new: { x: 1 },
    });
  });

  it('a portrait size names its tier by the short side; "auto" becomes Ark\'s "adaptive"', () => {
    expect(body(input(PRO10, { size: { width: 1080, height: 1920 }, aspectRatio: '9:16' }))).toMatchObject({ resolution: '1080p', ratio: '9:16' });
    expect(body(input(PRO10, { aspectRatio: 'auto', sent: { size: false, resolution: false, aspectRatio: true } })).ratio).toBe('adaptive');
  });

  it('accepts a base URL that already ends in /api/v3', () => {
    const req = vendor.buildCreate(input(PRO10), { ...up, baseUrl: 'https://ark.ap-southeast.bytepluses.com/api/v3' });
    expect(req.url).toBe('https://ark.ap-southeast.bytepluses.com/api/v3/contents/generations/tasks');
  });

  it('a non-empty native content[] replaces the derived content as a whole; an empty one does not', () => {
    const native: JsonObject[] = [{ type: 'text', text: 'mine' }, { type: 'draft_task', draft_task: { id: 'cgt-1' } }];
    expect(body(input(PRO15, { frameImages: [{ url: 'https://i.png', frameType: 'first_frame' }] }, { content: native })).content).toEqual(native);
    expect(body(input(PRO15, {}, { content: [] })).content).toEqual([{ type: 'text', text: 'a cat yawns at the camera' }]);
  });

  it('frames takes precedence over duration from any source, and native duration wins over seconds', () => {
    const withFrames = body(input(PRO10, { seconds: 5 }, { frames: 121, duration: 6 }));
    expect(withFrames.frames).toBe(121);
    expect('duration' in withFrames).toBe(false);
    expect(body(input(PRO10, { seconds: 5 }, { duration: 8 })).duration).toBe(8);
    expect(body(input(PRO15, {}, { duration: -1 })).duration).toBe(-1);
  });

  it('references become role-tagged blocks only where the family takes them', () => {
    expect(body(input(V20, { inputReferences: refs })).content).toEqual([
      { type: 'text', text: 'a cat yawns at the camera' },
      { type: 'image_url', image_url: { url: 'https://r/1.png' }, role: 'reference_image' },
      { type: 'video_url', video_url: { url: 'https://r/2.mp4' }, role: 'reference_video' },
      { type: 'audio_url', audio_url: { url: 'https://r/3.mp3' }, role: 'reference_audio' },
    ]);
    expect(body(input(LITE_I2V, { inputReferences: refs })).content).toEqual([
      { type: 'text', text: 'a cat yawns at the camera' },
      { type: 'image_url', image_url: { url: 'https://r/1.png' }, role: 'reference_image' },
    ]);
    expect(body(input(PRO15, { inputReferences: refs })).content).toEqual([{ type: 'text', text: 'a cat yawns at the camera' }]);
  });

  it('an endpoint id is judged by the public model name', () => {
    expect(body(input('ep-20250612-abcde', { inputReferences: refs }, {}, 'seedance-2.0')).content).toHaveLength(4);
    expect(body(input('ep-20250612-abcde', { inputReferences: refs }, {}, 'seedance-2.0')).model).toBe('ep-20250612-abcde');
  });
});

describe('seedance validate and estimate', () => {
  it('duration -1 and draft are 1.5 pro only', () => {
    expect(rejectParam(() => vendor.validate!(input(PRO10, {}, { duration: -1 })))).toBe('duration');
    expect(rejectParam(() => vendor.validate!(input(V20, { seconds: -1 })))).toBe('seconds');
    expect(rejectParam(() => vendor.validate!(input(LITE_I2V, {}, { draft: true })))).toBe('draft');
    expect(() => vendor.validate!(input(PRO15, {}, { duration: -1, draft: true }))).not.toThrow();
  });

  it('rejects fractional seconds, a non-array content and bad frames', () => {
    expect(rejectParam(() => vendor.validate!(input(PRO10, { seconds: 5.5 })))).toBe('seconds');
    expect(rejectParam(() => vendor.validate!(input(PRO10, {}, { content: { type: 'text' } })))).toBe('content');
    expect(rejectParam(() => vendor.validate!(input(PRO10, {}, { frames: 'many' })))).toBe('frames');
  });

  it('holds frames/24, native duration, seconds, the default, and the maximum for -1', () => {
    expect(vendor.estimateSeconds(input(PRO10, { seconds: 10 }, { frames: 121 }))).toBe(6);
    expect(vendor.estimateSeconds(input(PRO10, { seconds: 10 }, { duration: 4 }))).toBe(4);
    expect(vendor.estimateSeconds(input(PRO10, { seconds: 10 }))).toBe(10);
    expect(vendor.estimateSeconds(input(PRO10))).toBe(5);
    expect(vendor.estimateSeconds(input(PRO15, {}, { duration: -1 }))).toBe(12);
    expect(vendor.estimateSeconds(input(V20, { seconds: 5 }))).toBe(5);
  });

  it("holds the maximum for a draft's final render, whose length is the draft's and not stated here", () => {
    const fromDraft = { content: [{ type: 'draft_task', draft_task: { id: 'cgt-draft' } }] };
    expect(vendor.estimateSeconds(input(PRO15, {}, fromDraft))).toBe(12);
    // Whatever length the request names: the render keeps the draft's.
    expect(vendor.estimateSeconds(input(PRO15, { seconds: 5 }, { ...fromDraft, duration: 5 }))).toBe(12);
  });
});

const ref: TaskRef = { taskId: 'cgt-20250612172542-abcde', model: PRO15, upstreamModel: PRO15, meta: { seconds: 12 } };

function poll(payload: JsonObject, t: TaskRef = ref): VendorStatus {
  const st = vendor.parsePoll(res(200, payload), t, up);
  if ('next' in st) throw new Error('seedance never asks for a follow-up');
  return st;
}

describe('seedance parseCreate, buildPoll, buildContent', () => {
  it('reads the id, polls the task path with the key, downloads without it', () => {
    expect(vendor.parseCreate(res(200, { id: 'cgt-1' }), input(PRO15, {}, { duration: -1 }), up)).toEqual({ taskId: 'cgt-1', meta: { seconds: 12 }, vendorData: {} });
    expect(() => vendor.parseCreate(res(200, {}), input(PRO15), up)).toThrow(GatewayError);
    expect(vendor.buildPoll(ref, up)).toEqual({
      method: 'GET',
      url: 'https://ark.cn-beijing.volces.com/api/v3/contents/generations/tasks/cgt-20250612172542-abcde',
      headers: { authorization: `Bearer ${up.apiKey}` },
    });
    expect(vendor.buildContent(ref, { url: 'https://tos/v.mp4?X-Tos-Signature=s' }, up)).toEqual({ method: 'GET', url: 'https://tos/v.mp4?X-Tos-Signature=s', headers: {} });
  });
});

describe('seedance parsePoll', () => {
  const base = { id: ref.taskId, model: PRO15, error: null, created_at: 1779348818, updated_at: 1779348874, seed: 78674, resolution: '720p', ratio: '16:9', framespersecond: 24 };

  it('queued/running (and pending/processing, or anything new) are processing', () => {
    for (const s of ['queued', 'running', 'pending', 'processing', 'paused']) {
      const st = poll({ ...base, status: s, duration: 5 });
      expect(st.state).toBe('processing');
      expect(st.vendorData).toEqual({ ...omitId(base), duration: 5 });
    }
  });

  it('succeeded: seconds from duration, usage tokens, last_frame_url and unknown fields kept', () => {
    const st = poll({
      ...base,
      status: 'succeeded',
      duration: 8,
      content: { video_url: 'https://tos/v.mp4', last_frame_url: 'https://tos/l.png' },
      usage: { completion_tokens: 108900, total_tokens: 108900, tool_usage: { web_search: 0 } },
      service_tier: 'default',
      future_field: 'kept',
    });
    expect(st).toEqual({
      state: 'completed',
      seconds: 8,
      usage: { completion_tokens: 108900, total_tokens: 108900 },
      outputs: [{ url: 'https://tos/v.mp4', mimeType: 'video/mp4' }],
      vendorData: {
        ...omitId(base),
        duration: 8,
        content: { last_frame_url: 'https://tos/l.png' },
        usage: { tool_usage: { web_search: 0 } },
        service_tier: 'default',
        future_field: 'kept',
      },
    });
  });

  it('token counts that cannot be counts are not shown as usage but kept, as written, in vendor_data', () => {
    const st = poll({
      ...base,
      status: 'succeeded',
      duration: 5,
      content: { video_url: 'https://tos/v.mp4' },
      usage: { completion_tokens: -1e308, total_tokens: 1e300 },
    });
    expect(st.state === 'completed' && st.usage).toBeUndefined();
    expect(st.vendorData.usage).toEqual({ completion_tokens: -1e308, total_tokens: 1e300 });
    const mixed = poll({ ...base, status: 'succeeded', duration: 5, content: { video_url: 'https://tos/v.mp4' }, usage: { completion_tokens: 1.5, total_tokens: 900 } });
    expect(mixed.state === 'completed' && mixed.usage).toEqual({ total_tokens: 900 });
    expect(mixed.vendorData.usage).toEqual({ completion_tokens: 1.5 });
  });

  it('with frames, seconds = frames / framespersecond; without any length, the held seconds', () => {
    const st = poll({ ...base, status: 'succeeded', frames: 121, content: { video_url: 'https://tos/v.mp4' } });
    expect(st.state === 'completed' && st.seconds).toBeCloseTo(121 / 24, 6);
    const bare = poll({ id: 'x', status: 'succeeded', content: { video_url: 'https://tos/v.mp4' } });
    expect(bare.state === 'completed' && bare.seconds).toBe(12);
  });

  it('maps failure codes to stable codes and keeps the vendor error in vendor_data', () => {
    const cases: [string, string][] = [
      ['OutputVideoSensitiveContentDetected', 'content_policy_violation'],
      ['OutputAudioSensitiveContentDetected', 'content_policy_violation'],
      ['InputImageSensitiveContentDetected.PrivacyInformation', 'content_policy_violation'],
      ['OutputVideoRiskDetection', 'content_policy_violation'],
      ['InvalidImageURL', 'invalid_media'],
      ['InvalidParameter', 'unsupported_parameters'],
      ['MissingParameter', 'unsupported_parameters'],
      ['InternalServiceError', 'generation_failed'],
    ];
    for (const [code, expected] of cases) {
      const error = { code, message: `because ${code}. Request id: 0217` };
      const st = poll({ ...base, status: 'failed', error, duration: 5 });
      expect(st).toEqual({ state: 'failed', code: expected, message: error.message, vendorData: { ...omitId(base), error, duration: 5 } });
    }
  });

  it('cancelled and expired are terminal with their own codes', () => {
    expect(poll({ ...base, status: 'cancelled' })).toMatchObject({ state: 'failed', code: 'cancelled' });
    expect(poll({ ...base, status: 'expired' })).toMatchObject({ state: 'failed', code: 'expired' });
  });
});

function omitId(o: JsonObject): JsonObject {
  const { id: _id, ...rest } = o;
  return rest;
}

describe('seedance classifyError', () => {
  const env = (code: string, message = 'm', param?: string, type = 'BadRequest') => ({ error: { code, message, type, ...(param ? { param } : {}) } });

  it('separates client mistakes, moderation, account problems and retryable trouble', () => {
    expect(vendor.classifyError(res(400, env('InvalidParameter', 'ratio is invalid', 'ratio')))).toEqual({
      kind: 'client',
      status: 400,
      message: 'ratio is invalid',
      code: 'InvalidParameter',
      param: 'ratio',
    });
    expect(vendor.classifyError(res(400, env('InputTextSensitiveContentDetected', 'sensitive')))).toEqual({
      kind: 'moderation',
      message: 'sensitive',
      code: 'InputTextSensitiveContentDetected',
    });
    expect(vendor.classifyError(res(401, env('AuthenticationError', 'bad key', undefined, 'Unauthorized')))).toMatchObject({ kind: 'auth', status: 401 });
    expect(vendor.classifyError(res(403, env('AccountOverdueError')))).toMatchObject({ kind: 'auth', status: 403 });
    expect(vendor.classifyError(res(404, env('ModelNotOpen')))).toMatchObject({ kind: 'auth', status: 404 });
    expect(vendor.classifyError(res(404, env('ResourceNotFound')))).toMatchObject({ kind: 'client', status: 404 });
    expect(vendor.classifyError(res(429, env('RateLimitExceeded.EndpointRPMExceeded'), { 'retry-after': '2' }))).toMatchObject({
      kind: 'retryable',
      status: 429,
      retryAfterSeconds: 2,
    });
    expect(vendor.classifyError(res(500, env('InternalServiceError')))).toMatchObject({ kind: 'retryable', status: 500 });
  });

  it('leaves the masking of keys in a vendor message to the core', () => {
    const v = vendor.classifyError(res(400, env('InvalidParameter', `key ${up.apiKey} and Bearer abc.def rejected`)));
    // The core passes every verdict through the upstream's redactor before a client or a log sees it.
    const shown = redactorFor(up).text(v.message);
    expect(shown).not.toContain(up.apiKey!);
    expect(shown).not.toContain('abc.def');
  });
});
