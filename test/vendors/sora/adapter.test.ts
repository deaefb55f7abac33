import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import type { TaskRef } from '../../../src/video/types.js';
import { soraVendor as v } from '../../../src/video/vendors/sora/adapter.js';
import { redactorFor } from '../../../src/core/redact.js';
import { jsonResponse, makeInput, makeUpstream } from '../../kit/video.js';

const up = makeUpstream();
const task: TaskRef = { taskId: 'video_abc/1', model: 'sora-2', upstreamModel: 'sora-2', meta: { seconds: 8 } };

function catchError(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (e) {
    if (e instanceof GatewayError) return e;
    throw e;
  }
  throw new Error('expected a GatewayError');
}

/** A real-shaped video object as GET /v1/videos/{id} returns it. */
function video(over: Record<string, unknown>): Record<string, unknown> {
  return {
    id: 'video_68d7512d07848190b3e45da0ecbebcde004da08e1e0678d5',
    object: 'video',
    model: 'sora-2-2025-10-06',
    status: 'queued',
    progress: 0,
    created_at: 1758941485,
    completed_at: null,
    expires_at: null,
    prompt: 'a red fox',
    seconds: '8',
    size: '1280x720',
    remixed_from_video_id: null,
    error: null,
    ...over,
  };
}

describe('sora buildCreate', () => {
  it('sends the minimal body to POST /v1/videos with Bearer auth', () => {
    const req = v.buildCreate(makeInput({}), up);
    expect(req.method).toBe('POST');
    expect(req.url).toBe('https://api.openai.com/v1/videos');
    expect(req.headers).toEqual({ Authorization: 'Bearer sk-test-key-0001', 'Content-Type': 'application/json' });
    expect(req.body).toEqual({ model: 'sora-2', prompt: 'a red fox running through snow' });
  });

  it('sends seconds as a string and size as it is', () => {
    const req = v.buildCreate(makeInput({ std: { seconds: 8, size: { width: 1280, height: 720 } } }), up);
    expect(req.body).toEqual({ model: 'sora-2', prompt: 'a red fox running through snow', seconds: '8', size: '1280x720' });
  });

  it('uses the upstream model name', () => {
    const req = v.buildCreate(makeInput({ model: 'sora', upstreamModel: 'sora-2-pro-2025-10-06' }), up);
    expect((req.body as Record<string, unknown>).model).toBe('sora-2-pro-2025-10-06');
  });

  it('completes a size from aspect_ratio or resolution sent alone', () => {
    const size = (std: Parameters<typeof makeInput>[0]['std']) =>
      (v.buildCreate(makeInput({ std }), up).body as Record<string, unknown>).size;
    expect(size({ aspectRatio: '9:16' })).toBe('720x1280');
    expect(size({ aspectRatio: '16:9' })).toBe('1280x720');
    expect(size({ resolution: 1080 })).toBe('1920x1080');
    expect(size({ aspectRatio: 'adaptive' })).toBeUndefined();
    expect(size({ aspectRatio: 'auto' })).toBeUndefined();
  });

  it('refuses an aspect word that names no size, rather than making (and billing) the default', () => {
    const build = (aspectRatio: string) => () => v.buildCreate(makeInput({ std: { aspectRatio } }), up);
    expect(build('wide')).toThrow(expect.objectContaining({ status: 400, param: 'aspect_ratio' }));
  });

  it('maps a first_frame image to input_reference.image_url and ignores input_references', () => {
    const req = v.buildCreate(
      makeInput({
        std: {
          frameImages: [{ url: 'https://img.example/first.png', frameType: 'first_frame' }],
          inputReferences: [{ type: 'video', url: 'https://vid.example/ref.mp4', role: 'reference_video' }],
        },
      }),
      up,
    );
    expect(req.body).toEqual({
      model: 'sora-2',
      prompt: 'a red fox running through snow',
      input_reference: { image_url: 'https://img.example/first.png' },
    });
  });

  it('lets a native input_reference replace the derived one whole', () => {
    const req = v.buildCreate(
      makeInput({
        std: { frameImages: [{ url: 'https://img.example/first.png', frameType: 'first_frame' }] },
        native: { input_reference: { file_id: 'file-123' } },
      }),
      up,
    );
    expect((req.body as Record<string, unknown>).input_reference).toEqual({ file_id: 'file-123' });
  });

  it('passes unknown native fields through at the top level unchanged', () => {
    const native = { user: 'u-7', metadata: { campaign: { id: 9, tags: ['a', 'b'] } }, brand_new_flag: true, quality: null };
    const req = v.buildCreate(makeInput({ std: { seconds: 4 }, native }), up);
    expect(req.body).toEqual({ model: 'sora-2', prompt: 'a red fox running through snow', seconds: '4', ...native });
  });

  it('reads organization, project and auth style from the upstream options', () => {
    const azure = makeUpstream({
      baseUrl: 'https://res.openai.azure.com/openai',
      apiKey: 'azurekey',
      options: { auth_style: 'api-key', organization: 'org-1', project: 'proj-1' },
    });
    const req = v.buildCreate(makeInput({}), azure);
    expect(req.url).toBe('https://res.openai.azure.com/openai/v1/videos');
    expect(req.headers).toEqual({
      'api-key': 'azurekey',
      'OpenAI-Organization': 'org-1',
      'OpenAI-Project': 'proj-1',
      'Content-Type': 'application/json',
    });
  });
});

describe('sora validate and estimate', () => {
  it('accepts the documented seconds and rejects the rest with param seconds', () => {
    for (const s of [4, 8, 12]) expect(() => v.validate!(makeInput({ std: { seconds: s } }))).not.toThrow();
    for (const s of [16, 20, 5, 10, 4.5, 24]) {
      const e = catchError(() => v.validate!(makeInput({ std: { seconds: s } })));
      expect([e.status, e.param]).toEqual([400, 'seconds']);
    }
    // Given as the common `duration`, the error names that field, not one the client never sent.
    const e = catchError(() => v.validate!(makeInput({ native: { duration: 5 } })));
    expect([e.status, e.param]).toEqual([400, 'duration']);
    expect(e.message).toMatch(/^duration must be one of/);
  });

  it('refuses a last_frame or a second first_frame instead of dropping it', () => {
    const last = catchError(() =>
      v.validate!(makeInput({ std: { frameImages: [{ url: 'https://x/l.png', frameType: 'last_frame' }] } })),
    );
    expect([last.status, last.param]).toEqual([400, 'frame_images']);
    const two = catchError(() =>
      v.validate!(
        makeInput({
          std: {
            frameImages: [
              { url: 'https://x/a.png', frameType: 'first_frame' },
              { url: 'https://x/b.png', frameType: 'first_frame' },
            ],
          },
        }),
      ),
    );
    expect(two.param).toBe('frame_images');
  });

  it('holds the requested seconds, or the vendor default of 4', () => {
    expect(v.estimateSeconds(makeInput({}))).toBe(4);
    expect(v.estimateSeconds(makeInput({ std: { seconds: 12 } }))).toBe(12);
  });

  it('owns input_reference but none of the common names', () => {
    expect(v.ownedParams.has('input_reference')).toBe(true);
    for (const common of ['seconds', 'size', 'duration', 'seed', 'n', 'user']) expect(v.ownedParams.has(common)).toBe(false);
  });
});

describe('sora create, poll and content', () => {
  it('reads the video id at create and remembers the requested seconds', () => {
    const input = makeInput({ std: { seconds: 12 } });
    const r = v.parseCreate(jsonResponse(200, video({ id: 'video_1' })), input, up);
    expect(r).toEqual({ taskId: 'video_1', meta: { seconds: 12 }, vendorData: video({ id: 'video_1' }) });
    const e = catchError(() => v.parseCreate(jsonResponse(200, { object: 'video' }), input, up));
    expect(e.status).toBe(502);
  });

  it('polls GET /v1/videos/{id} with the id escaped', () => {
    const req = v.buildPoll(task, up);
    expect(req).toEqual({ method: 'GET', url: 'https://api.openai.com/v1/videos/video_abc%2F1', headers: { Authorization: 'Bearer sk-test-key-0001' } });
  });

  it('maps queued and in_progress to processing with progress', () => {
    expect(v.parsePoll(jsonResponse(200, video({ status: 'queued' })), task, up)).toMatchObject({ state: 'processing', progress: 0 });
    expect(v.parsePoll(jsonResponse(200, video({ status: 'in_progress', progress: 42 })), task, up)).toMatchObject({
      state: 'processing',
      progress: 42,
    });
  });

  it('maps completed to the reported duration, one output and the whole object as vendor_data', () => {
    const payload = video({ status: 'completed', progress: 100, seconds: '12', completed_at: 1758941600, expires_at: 1758945200, newer_field: { x: [1, 2] } });
    const st = v.parsePoll(jsonResponse(200, payload), task, up);
    expect(st).toEqual({
      state: 'completed',
      seconds: 12,
      billableSeconds: 12,
      outputs: [{ url: 'https://api.openai.com/v1/videos/video_abc%2F1/content', mimeType: 'video/mp4' }],
      vendorData: payload,
    });
  });

  it('falls back to the requested seconds when a completed object lacks them', () => {
    const st = v.parsePoll(jsonResponse(200, video({ status: 'completed', seconds: undefined })), task, up);
    expect(st).toMatchObject({ state: 'completed', seconds: 8 });
  });

  it('maps every failure to a stable code and keeps the vendor code in vendor_data', () => {
    const cases: [string | undefined, string, string][] = [
      ['moderation_blocked', 'Blocked by our moderation system.', 'content_policy_violation'],
      ['content_policy_violation', 'Policy.', 'content_policy_violation'],
      ['internal_error', 'Video generation failed due to an internal error.', 'generation_failed'],
      ['invalid_input_reference', 'The input reference image could not be downloaded.', 'invalid_media'],
      ['unsupported_parameters', 'The requested size is not supported for this duration.', 'unsupported_parameters'],
      [undefined, 'Something else went wrong.', 'generation_failed'],
    ];
    for (const [code, message, expected] of cases) {
      const payload = video({ status: 'failed', error: code ? { code, message } : { message } });
      const st = v.parsePoll(jsonResponse(200, payload), task, up);
      expect(st).toEqual({ state: 'failed', code: expected, message, vendorData: payload });
    }
    const bare = v.parsePoll(jsonResponse(200, video({ status: 'failed' })), task, up);
    expect(bare).toMatchObject({ state: 'failed', code: 'generation_failed', message: 'Video generation failed.' });
  });

  it('keeps an unknown status processing and maps cancelled/expired if they ever appear', () => {
    expect(v.parsePoll(jsonResponse(200, video({ status: 'rendering' })), task, up)).toMatchObject({ state: 'processing' });
    expect(v.parsePoll(jsonResponse(200, video({ status: 'cancelled' })), task, up)).toMatchObject({ state: 'failed', code: 'cancelled' });
    expect(v.parsePoll(jsonResponse(200, video({ status: 'expired' })), task, up)).toMatchObject({ state: 'failed', code: 'expired' });
  });

  it('downloads from this upstream only, whatever URL the output carries', () => {
    const req = v.buildContent(task, { url: 'https://elsewhere.example/steal' }, up);
    expect(req).toEqual({
      method: 'GET',
      url: 'https://api.openai.com/v1/videos/video_abc%2F1/content',
      headers: { Authorization: 'Bearer sk-test-key-0001', Accept: 'application/binary' },
    });
  });
});

describe('sora classifyError', () => {
  const oai = (status: number, error: Record<string, unknown>, headers: Record<string, string> = {}) =>
    v.classifyError(jsonResponse(status, { error: { type: 'invalid_request_error', param: null, code: null, ...error } }, headers));

  it('reports parameter errors as client errors with code and param', () => {
    expect(oai(400, { message: "Invalid value: '10'.", param: 'seconds', code: 'invalid_value' })).toEqual({
      kind: 'client',
      status: 400,
      message: "Invalid value: '10'.",
      code: 'invalid_value',
      param: 'seconds',
    });
    expect(oai(404, { message: "Video with id 'x' not found." })).toMatchObject({ kind: 'client', status: 404 });
    expect(oai(413, { message: 'too big' })).toMatchObject({ kind: 'client', status: 413 });
    expect(oai(409, { message: 'conflict' })).toMatchObject({ kind: 'client', status: 400 });
  });

  it('recognises moderation at submit', () => {
    expect(oai(400, { message: 'Your request was blocked by our moderation system.', code: 'moderation_blocked' })).toEqual({
      kind: 'moderation',
      message: 'Your request was blocked by our moderation system.',
      code: 'moderation_blocked',
    });
  });

  it('treats bad keys and missing models as this upstream being unusable, with the key redacted', () => {
    const bad = oai(401, { message: 'Incorrect API key provided: sk-proj-****abcd. You can find your API key at x.', code: 'invalid_api_key' });
    expect(bad).toMatchObject({ kind: 'auth', status: 401 });
    // Kept as the vendor wrote it: the core's redactor hides credentials before a client or a log sees it.
    expect(redactorFor(up).text(bad.message)).not.toContain('abcd');
    expect(oai(403, { message: 'Your organization must be verified.' })).toMatchObject({ kind: 'auth', status: 403 });
    expect(oai(404, { message: 'The model sora-2 does not exist.', code: 'model_not_found' })).toMatchObject({ kind: 'auth', status: 404 });
    expect(oai(400, { message: "Invalid value: 'sora-9'.", param: 'model', code: 'invalid_value' })).toMatchObject({ kind: 'auth' });
  });

  it('retries 429 and 5xx with the wait the headers ask for', () => {
    expect(oai(429, { message: 'Rate limit reached.' }, { 'retry-after': '7' })).toEqual({
      kind: 'retryable',
      status: 429,
      message: 'Rate limit reached.',
      retryAfterSeconds: 7,
    });
    expect(oai(429, { message: 'slow down' }, { 'x-ratelimit-reset-requests': '6m0s' })).toMatchObject({ retryAfterSeconds: 360 });
    expect(v.classifyError({ status: 503, headers: {}, json: undefined, text: 'upstream connect error' })).toEqual({
      kind: 'retryable',
      status: 503,
      message: 'upstream connect error',
    });
  });
});
