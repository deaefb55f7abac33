import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/core/json.js';
import { GatewayError } from '../../../src/core/errors.js';
import type { Upstream, UpstreamRequest } from '../../../src/http/types.js';
import type { TaskRef, VendorStatus } from '../../../src/video/types.js';
import { redactorFor } from '../../../src/core/redact.js';
import { falVendor as fal } from '../../../src/video/vendors/fal/adapter.js';
import { answer as res, falInput as input, falUpstream } from '../../kit/fal.js';

const BASE = 'https://queue.fal.run';
const upstream = (options: JsonObject = {}): Upstream => falUpstream(BASE, options);

function task(meta: JsonObject = {}, model = 'fal-ai/veo3/fast'): TaskRef {
  return { taskId: 'req-1', model, upstreamModel: model, meta: { app: 'fal-ai/veo3', seconds: 6, ...meta } };
}

describe('fal submit answer and polling', () => {
  const submitted = {
    request_id: 'req-1',
    gateway_request_id: 'gw-1',
    response_url: 'https://queue.fal.run/fal-ai/veo3/requests/req-1',
    status_url: 'https://queue.fal.run/fal-ai/veo3/requests/req-1/status',
    cancel_url: 'https://queue.fal.run/fal-ai/veo3/requests/req-1/cancel',
    queue_position: 0,
  };

  it('keeps the returned URLs, the app path and the sent seconds in the task meta', () => {
    const out = fal.parseCreate(res(200, submitted), input('fal-ai/veo3/fast', { seconds: 6 }), upstream());
    expect(out.taskId).toBe('req-1');
    expect(out.meta).toEqual({
      app: 'fal-ai/veo3',
      seconds: 6,
      status_url: submitted.status_url,
      response_url: submitted.response_url,
      cancel_url: submitted.cancel_url,
      gateway_request_id: 'gw-1',
    });
  });

  it('a submit answer without request_id is an upstream error', () => {
    expect(() => fal.parseCreate(res(200, { status: 'IN_QUEUE' }), input('fal-ai/veo3'), upstream())).toThrow(GatewayError);
  });

  it('polls the returned status URL, even behind a proxy origin, with Key auth', () => {
    const req = fal.buildPoll(task({ status_url: submitted.status_url }), upstream());
    expect(req).toEqual({ method: 'GET', url: submitted.status_url, headers: { accept: 'application/json', authorization: 'Key k-123' } });
    const proxied = { ...upstream(), baseUrl: 'https://fal-proxy.internal' };
    expect(fal.buildPoll(task({ status_url: submitted.status_url }), proxied).url).toBe(submitted.status_url);
  });

  it('never sends the key to a host it does not trust; falls back to the documented owner/app layout', () => {
    const t = task({ status_url: 'https://evil.example/steal' });
    expect(fal.buildPoll(t, upstream()).url).toBe(`${BASE}/fal-ai/veo3/requests/req-1/status`);
    expect(fal.buildPoll(task({ status_url: 'http://queue.fal.run/x' }), upstream()).url).toBe(`${BASE}/fal-ai/veo3/requests/req-1/status`);
    const up = upstream({ trusted_hosts: ['evil.example'] });
    expect(fal.buildPoll(t, up).url).toBe('https://evil.example/steal');
  });

  const poll = (status: number, json: unknown, t = task({ response_url: submitted.response_url })) =>
    fal.parsePoll(res(status, json), t, upstream());

  it('IN_QUEUE, IN_PROGRESS and unknown statuses keep the job processing, with every field in vendor_data', () => {
    const q = poll(202, { status: 'IN_QUEUE', queue_position: 3, response_url: 'r', sim_trace_id: 't1' }) as VendorStatus;
    expect(q).toEqual({ state: 'processing', phase: 'queued', vendorData: { queue_position: 3, response_url: 'r', sim_trace_id: 't1' } });
    const p = poll(202, { status: 'IN_PROGRESS', logs: [{ message: 'step 3' }] }) as VendorStatus;
    expect(p).toEqual({ state: 'processing', phase: 'running', vendorData: { logs: [{ message: 'step 3' }] } });
    expect(poll(200, { status: 'WARMING_UP' }) as VendorStatus).toEqual({ state: 'processing', vendorData: {} });
    expect((poll(200, 'not json') as VendorStatus).state).toBe('processing');
  });

  it('COMPLETED asks for the result at the response URL', () => {
    const out = poll(200, { status: 'COMPLETED', metrics: { inference_time: 41.2 }, response_url: submitted.response_url });
    expect(out).toMatchObject({ next: { method: 'GET', url: submitted.response_url, headers: { accept: 'application/json', authorization: 'Key k-123' } } });
    // The status answer's own fields ride along, so the final vendor_data keeps them.
    expect((out as { vendorData: object }).vendorData).not.toHaveProperty('status');
    const fromMeta = poll(200, { status: 'COMPLETED' });
    expect((fromMeta as { next: UpstreamRequest }).next.url).toBe(submitted.response_url);
  });

  it('a status that already carries the failure fails the job without fetching the result', () => {
    const a = poll(200, { status: 'COMPLETED', error: 'Runner disconnected', error_type: 'runner_disconnected' });
    expect(a).toEqual({
      state: 'failed',
      code: 'generation_failed',
      message: 'Runner disconnected',
      vendorData: { error: 'Runner disconnected', error_type: 'runner_disconnected' },
    });
    expect(poll(200, { status: 'FAILED' })).toMatchObject({ state: 'failed', code: 'generation_failed' });
    expect(poll(200, { status: 'CANCELED' })).toMatchObject({ state: 'failed', code: 'cancelled' });
    expect(poll(200, { status: 'COMPLETED', error: null })).toHaveProperty('next');
  });
});

describe('fal result parsing', () => {
  const result = (json: unknown, meta: JsonObject = {}) => fal.parsePoll(res(200, json), task(meta), upstream()) as VendorStatus;

  it('a video result completes with the sent seconds and keeps every field in vendor_data', () => {
    const payload = {
      video: { url: 'https://v3.fal.media/files/a/output.mp4', content_type: 'video/mp4', file_name: 'output.mp4', file_size: 4823711 },
      seed: 123456,
      timings: { inference: 40.1 },
      sim_trace_id: 'trace-x',
    };
    expect(result(payload)).toEqual({
      state: 'completed',
      seconds: 6,
      billableSeconds: 6,
      outputs: [{ url: 'https://v3.fal.media/files/a/output.mp4', mimeType: 'video/mp4' }],
      vendorData: payload,
    });
  });

  it('takes the actual seconds from the result when it reports them', () => {
    expect(result({ video: { url: 'u', duration: 8.04 } })).toMatchObject({ seconds: 8.04 });
    expect(result({ video: { url: 'u', num_frames: 121, fps: 24 } })).toMatchObject({ seconds: 121 / 24 });
    expect(result({ video: { url: 'u' }, duration: '10s' })).toMatchObject({ seconds: 10 });
  });

  it('bills every video of a videos[] result', () => {
    const out = result({ videos: [{ url: 'a', duration: 5 }, { url: 'b', duration: 4 }, 'https://c.example/c.mp4'] }, { seconds: 5 });
    expect(out).toMatchObject({ state: 'completed', seconds: 5, billableSeconds: 14 });
    expect((out as { outputs: unknown[] }).outputs).toEqual([{ url: 'a' }, { url: 'b' }, { url: 'https://c.example/c.mp4' }]);
  });

  it('a sync_mode data URL becomes inline base64 and is left out of vendor_data', () => {
    const b64 = Buffer.from('fake-mp4').toString('base64');
    const out = result({ video: { url: `data:video/mp4;base64,${b64}`, file_size: 8 }, seed: 1 });
    expect(out).toMatchObject({ state: 'completed', outputs: [{ inlineBase64: b64, mimeType: 'video/mp4' }] });
    expect((out as { vendorData: JsonObject }).vendorData).toEqual({ video: { file_size: 8 }, seed: 1 });
  });

  it('a result without a video is a failed job, mapped from its error when it has one', () => {
    expect(result({ detail: [{ loc: ['body'], msg: 'No video was generated', type: 'no_media_generated' }] })).toMatchObject({
      state: 'failed',
      code: 'generation_failed',
      message: 'No video was generated',
    });
    expect(result({ images: [] })).toMatchObject({ state: 'failed', code: 'generation_failed', vendorData: { images: [] } });
  });

  it('content is fetched from the CDN URL without the key', () => {
    const req = fal.buildContent(task(), { url: 'https://v3.fal.media/files/a/output.mp4' }, upstream());
    expect(req).toEqual({ method: 'GET', url: 'https://v3.fal.media/files/a/output.mp4', headers: {} });
  });
});

describe('fal error classification', () => {
  const detail = (type: string, loc = ['body', 'prompt'], msg = 'something is wrong') => ({ detail: [{ loc, msg, type, url: 'https://docs.fal.ai/errors' }] });

  it('maps model errors to failure codes: moderation, media, validation, other', () => {
    expect(fal.classifyError(res(422, detail('content_policy_violation')))).toEqual({
      kind: 'moderation',
      message: 'something is wrong (content_policy_violation)',
      code: 'content_policy_violation',
    });
    expect(fal.classifyError(res(422, detail('file_download_error', ['body', 'image_url'])))).toEqual({
      kind: 'client',
      status: 422,
      message: 'something is wrong (file_download_error)',
      code: 'invalid_media',
      param: 'image_url',
    });
    expect(fal.classifyError(res(422, detail('literal_error', ['body', 'duration'])))).toMatchObject({
      kind: 'client',
      code: 'unsupported_parameters',
      param: 'duration',
    });
    expect(fal.classifyError(res(422, detail('image_too_large')))).toMatchObject({ kind: 'client', code: 'invalid_media' });
    expect(fal.classifyError(res(422, detail('no_media_generated')))).toMatchObject({ kind: 'client', code: 'generation_failed' });
  });

  it('request errors that end a queued request are final; other 5xx are retryable', () => {
    const disconnected = res(503, { detail: 'Runner disconnected', error_type: 'runner_disconnected' }, { 'x-fal-error-type': 'runner_disconnected' });
    expect(fal.classifyError(disconnected)).toEqual({
      kind: 'client',
      status: 422,
      message: 'Runner disconnected (runner_disconnected)',
      code: 'generation_failed',
    });
    expect(fal.classifyError(res(499, { detail: 'cancelled', error_type: 'client_cancelled' }))).toMatchObject({ kind: 'client', code: 'cancelled' });
    expect(fal.classifyError(res(503, { error: { message: 'injected 503' } }))).toMatchObject({ kind: 'retryable', status: 503 });
    expect(fal.classifyError(res(500, { detail: 'oops', error_type: 'internal_error' }))).toMatchObject({ kind: 'retryable', status: 500 });
    expect(fal.classifyError({ status: 502, headers: {}, json: undefined, text: '<html>nginx</html>' })).toEqual({
      kind: 'retryable',
      status: 502,
      message: 'fal answered HTTP 502',
      retryAfterSeconds: undefined,
    });
  });

  it('429 carries Retry-After; 401/403 are credential problems; 404 is the caller', () => {
    expect(fal.classifyError(res(429, { detail: 'Too many requests' }, { 'retry-after': '7' }))).toEqual({
      kind: 'retryable',
      status: 429,
      message: 'Too many requests',
      retryAfterSeconds: 7,
    });
    expect(fal.classifyError(res(401, { detail: 'No user found for Key ID and Secret' }))).toMatchObject({ kind: 'auth', status: 401 });
    expect(fal.classifyError(res(403, { detail: 'User is locked. Reason: Exhausted balance' }))).toMatchObject({ kind: 'auth', status: 403 });
    expect(fal.classifyError(res(404, { detail: 'Application not found' }))).toEqual({ kind: 'client', status: 404, message: 'Application not found' });
    expect(fal.classifyError(res(400, { detail: 'Bad input' }))).toEqual({ kind: 'client', status: 400, message: 'Bad input' });
  });

  it('never echoes a key', () => {
    const key = '0a1b2c3d-0000-4111-8222-123456789abc:0123456789abcdef0123456789abcdef';
    const out = fal.classifyError(res(401, { detail: `Invalid key ${key} given (Authorization: Key ${key})` }));
    // Kept as the vendor wrote it: the core's redactor hides credentials before a client or a log sees it.
    const shown = redactorFor(falUpstream('https://queue.fal.run', {}, key)).text(out.message);
    expect(shown).not.toContain('0123456789abcdef');
    expect(shown).toContain('[redacted]');
  });
});
