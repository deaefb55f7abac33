import { describe, expect, it } from 'vitest';
import type { Json, JsonObject } from '../../../src/core/json.js';
import type { UpstreamResponse } from '../../../src/http/types.js';
import type { TaskRef } from '../../../src/video/types.js';
import { veoVendor as veo } from '../../../src/video/vendors/veo/adapter.js';
import { redactorFor } from '../../../src/core/redact.js';
import { input, upstream } from '../../kit/veo.js';

const OP = 'projects/acme-video/locations/europe-west4/publishers/google/models/veo-3.1-fast-generate-001/operations/7f2c1d9e-0b1a-4c55-9d3e-1a2b3c4d5e6f';
const TYPE = 'type.googleapis.com/cloud.ai.large_models.vision.GenerateVideoResponse';
const MP4_B64 = Buffer.from('not really an mp4 but bytes').toString('base64');

function task(meta: JsonObject = { durationSeconds: 6, sampleCount: 2 }): TaskRef {
  return { taskId: OP, model: 'veo-3.1-fast', upstreamModel: 'veo-3.1-fast-generate-001', meta };
}

function res(json: Json | undefined, status = 200, headers: Record<string, string> = {}, text?: string): UpstreamResponse {
  return { status, headers, json, text: text ?? (json === undefined ? '' : JSON.stringify(json)) };
}

function poll(json: Json | undefined, meta?: JsonObject) {
  const s = veo.parsePoll(res(json), task(meta), upstream());
  if ('next' in s) throw new Error('veo never asks for a second request');
  return s;
}

describe('veo create and poll requests', () => {
  it('parseCreate keeps the full operation name and the requested output in meta', () => {
    const i = input({ std: { seconds: 4 }, native: { sampleCount: 3 } });
    expect(veo.parseCreate(res({ name: OP }), i, upstream())).toEqual({ taskId: OP, meta: { durationSeconds: 4, sampleCount: 3 }, vendorData: {} });
    expect(() => veo.parseCreate(res({ done: false }), i, upstream())).toThrow(/operation name/);
  });

  it('polls with POST :fetchPredictOperation on the project, location and model of the operation name', () => {
    const req = veo.buildPoll(task(), upstream({}, { baseUrl: '' }));
    expect(req.method).toBe('POST');
    expect(req.url).toBe(
      'https://europe-west4-aiplatform.googleapis.com/v1/projects/acme-video/locations/europe-west4/publishers/google/models/veo-3.1-fast-generate-001:fetchPredictOperation',
    );
    expect(req.body).toEqual({ operationName: OP });
    const viaBase = veo.buildPoll(task(), upstream());
    expect(viaBase.url.startsWith('https://us-central1-aiplatform.googleapis.com/v1/projects/acme-video/locations/europe-west4/')).toBe(true);
  });

  it('falls back to the upstream options when the name is not a publisher-model operation', () => {
    const odd: TaskRef = { ...task(), taskId: 'operations/123' };
    expect(veo.buildPoll(odd, upstream()).url).toBe(
      'https://us-central1-aiplatform.googleapis.com/v1/projects/acme-video/locations/us-central1/publishers/google/models/veo-3.1-fast-generate-001:fetchPredictOperation',
    );
  });

  it('content: gs:// objects are read through the Cloud Storage JSON API with the object name encoded', () => {
    const req = veo.buildContent(task(), { url: 'gs://my-bucket/veo out/123/sample_0.mp4', mimeType: 'video/mp4' }, upstream());
    expect(req).toEqual({
      method: 'GET',
      url: 'https://storage.googleapis.com/storage/v1/b/my-bucket/o/veo%20out%2F123%2Fsample_0.mp4?alt=media',
      headers: {},
    });
    const sim = veo.buildContent(task(), { url: 'gs://b/o.mp4' }, upstream({ storage_base_url: 'http://127.0.0.1:9/' }));
    expect(sim.url).toBe('http://127.0.0.1:9/storage/v1/b/b/o/o.mp4?alt=media');
    expect(() => veo.buildContent(task(), { inlineBase64: MP4_B64 }, upstream())).toThrow();
  });
});

describe('veo parsePoll', () => {
  it('no done field: processing, vendor_data without the operation name', () => {
    const s = poll({ name: OP, metadata: { createTime: '2025-01-01T00:00:00Z' }, sim_trace_id: 't-1' });
    expect(s).toEqual({ state: 'processing', vendorData: { metadata: { createTime: '2025-01-01T00:00:00Z' }, sim_trace_id: 't-1' } });
    expect(poll({ name: OP, done: false }).state).toBe('processing');
    expect(poll(undefined).state).toBe('processing');
  });

  it('done with gcsUri videos: completed, every video an output, billed per video, vendor_data lossless', () => {
    const payload: JsonObject = {
      name: OP,
      done: true,
      response: {
        '@type': TYPE,
        raiMediaFilteredCount: 0,
        videos: [
          { gcsUri: 'gs://out/op/sample_0.mp4', mimeType: 'video/mp4', newVideoField: 'a' },
          { gcsUri: 'gs://out/op/sample_1.mp4', mimeType: 'video/mp4' },
        ],
        futureResponseField: { x: 1 },
      },
      sim_trace_id: 't-2',
    };
    const s = poll(payload);
    expect(s).toEqual({
      state: 'completed',
      seconds: 6,
      billableSeconds: 12,
      outputs: [
        { url: 'gs://out/op/sample_0.mp4', mimeType: 'video/mp4' },
        { url: 'gs://out/op/sample_1.mp4', mimeType: 'video/mp4' },
      ],
      vendorData: { response: payload.response, sim_trace_id: 't-2' },
    });
  });

  it('done with inline base64: outputs carry the bytes, vendor_data lists the videos without them', () => {
    const s = poll({ name: OP, done: true, response: { '@type': TYPE, videos: [{ bytesBase64Encoded: MP4_B64, mimeType: 'video/mp4' }] } });
    expect(s.state).toBe('completed');
    if (s.state !== 'completed') return;
    expect(s.outputs).toEqual([{ inlineBase64: MP4_B64, mimeType: 'video/mp4' }]);
    expect(s.billableSeconds).toBe(6);
    expect(s.vendorData).toEqual({ response: { '@type': TYPE, videos: [{ mimeType: 'video/mp4' }] } });
    expect(JSON.stringify(s.vendorData)).not.toContain(MP4_B64);
  });

  it('some videos filtered: completed with what is left, billed for what is left', () => {
    const s = poll(
      {
        done: true,
        response: { raiMediaFilteredCount: 1, raiMediaFilteredReasons: ['Support codes: 29310472'], videos: [{ gcsUri: 'gs://o/a.mp4' }] },
      },
      { durationSeconds: 8, sampleCount: 2 },
    );
    expect(s).toMatchObject({ state: 'completed', seconds: 8, billableSeconds: 8, outputs: [{ url: 'gs://o/a.mp4', mimeType: 'video/mp4' }] });
    expect(s.vendorData).toMatchObject({ response: { raiMediaFilteredCount: 1, raiMediaFilteredReasons: ['Support codes: 29310472'] } });
  });

  it('done, no videos, filtered: failed with the moderation code and the filter reasons', () => {
    const reasons = ["Veo could not generate videos because the input image violates Vertex AI's usage guidelines. Support codes: 17301594"];
    const s = poll({ name: OP, done: true, response: { '@type': TYPE, raiMediaFilteredCount: 2, raiMediaFilteredReasons: reasons } });
    expect(s).toEqual({
      state: 'failed',
      code: 'content_policy_violation',
      message: reasons[0],
      vendorData: { response: { '@type': TYPE, raiMediaFilteredCount: 2, raiMediaFilteredReasons: reasons } },
    });
    expect(poll({ done: true, response: { raiMediaFilteredCount: '1' } })).toMatchObject({ state: 'failed', code: 'content_policy_violation' });
  });

  it('done with nothing at all: generation_failed', () => {
    expect(poll({ done: true, response: { raiMediaFilteredCount: 0, videos: [] } })).toMatchObject({ state: 'failed', code: 'generation_failed' });
    expect(poll({ done: true })).toMatchObject({ state: 'failed', code: 'generation_failed' });
  });

  it('maps the operation error (numeric or string gRPC code) to a stable failure code, keeping the vendor error', () => {
    const cases: [Json, string, string][] = [
      [13, 'Internal error encountered.', 'generation_failed'],
      ['13', 'Internal error encountered.', 'generation_failed'],
      [3, 'Unsupported output video duration 5 seconds, supported durations are [4,6,8].', 'unsupported_parameters'],
      ['INVALID_ARGUMENT', 'Unsupported combination of resolution and duration.', 'unsupported_parameters'],
      [9, 'Generated video is large, an output storage uri is required.', 'unsupported_parameters'],
      [3, 'Failed to read the input image: the image could not be decoded.', 'invalid_media'],
      [5, 'The gs://frames/a.png object does not exist.', 'invalid_media'],
      [3, 'The prompt could not be submitted. It contains words flagged as sensitive. Support codes: 61493863', 'content_policy_violation'],
      [1, 'The operation was cancelled.', 'cancelled'],
      [4, 'Deadline exceeded.', 'timeout'],
    ];
    for (const [code, message, expected] of cases) {
      const s = poll({ name: OP, done: true, error: { code, message, details: [] } });
      expect(s, `${String(code)} ${message}`).toEqual({ state: 'failed', code: expected, message, vendorData: { error: { code, message, details: [] } } });
    }
  });

  it('uses 8 seconds per video when the job meta has no duration', () => {
    expect(poll({ done: true, response: { videos: [{ gcsUri: 'gs://o/a.mp4' }] } }, {})).toMatchObject({ seconds: 8, billableSeconds: 8 });
  });
});

describe('veo classifyError', () => {
  const google = (code: number, status: string, message: string, details?: Json) => ({ error: { code, message, status, ...(details ? { details } : {}) } });

  it('400 INVALID_ARGUMENT is the client\'s, with the vendor message', () => {
    expect(veo.classifyError(res(google(400, 'INVALID_ARGUMENT', 'sampleCount must be between 1 and 4.'), 400))).toEqual({
      kind: 'client',
      status: 400,
      message: 'INVALID_ARGUMENT: sampleCount must be between 1 and 4.',
    });
  });

  it('a responsible-AI rejection at create is moderation', () => {
    const v = veo.classifyError(res(google(400, 'INVALID_ARGUMENT', 'Your prompt violates our usage guidelines. Support codes: 58061214'), 400));
    expect(v).toMatchObject({ kind: 'moderation', code: 'content_policy_violation' });
  });

  it('401 and credential 403s are auth; a 403 for an allow-listed feature is the client\'s', () => {
    expect(veo.classifyError(res(google(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.'), 401)).kind).toBe('auth');
    expect(veo.classifyError(res(google(403, 'PERMISSION_DENIED', 'Vertex AI API has not been used in project 123 before.'), 403)).kind).toBe('auth');
    expect(
      veo.classifyError(res(google(403, 'PERMISSION_DENIED', 'personGeneration allow_all requires your project to be allowlisted.'), 403)),
    ).toMatchObject({ kind: 'client', status: 400 });
  });

  it('404 is the client\'s, without the operator\'s project in the message', () => {
    const v = veo.classifyError(
      res(google(404, 'NOT_FOUND', 'Publisher Model `projects/acme-video/locations/us-central1/publishers/google/models/veo-9` not found.'), 404),
    );
    expect(v).toMatchObject({ kind: 'client', status: 404 });
    expect(v.message).not.toContain('acme-video');
    expect(v.message).toContain('veo-9');
  });

  it('429 and 5xx are retryable, with Retry-After from the header or a RetryInfo detail', () => {
    expect(veo.classifyError(res(google(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded'), 429, { 'retry-after': '12' }))).toEqual({
      kind: 'retryable',
      status: 429,
      message: 'RESOURCE_EXHAUSTED: Quota exceeded',
      retryAfterSeconds: 12,
    });
    const info = [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '30s' }];
    expect(veo.classifyError(res(google(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded', info), 429))).toMatchObject({ retryAfterSeconds: 30 });
    expect(veo.classifyError(res(google(503, 'UNAVAILABLE', 'The service is currently unavailable.'), 503))).toMatchObject({ kind: 'retryable', status: 503 });
    expect(veo.classifyError(res(undefined, 502, {}, '<html>Bad Gateway</html>'))).toMatchObject({ kind: 'retryable', status: 502, message: '<html>Bad Gateway</html>' });
  });

  it('other statuses: 413/422 kept, the rest a 400; OAuth and Cloud Storage envelopes are read too', () => {
    expect(veo.classifyError(res(google(413, 'INVALID_ARGUMENT', 'Request payload size exceeds the limit'), 413))).toMatchObject({ kind: 'client', status: 413 });
    expect(veo.classifyError(res({ error: 'invalid_grant', error_description: 'Invalid JWT Signature.' }, 400))).toEqual({
      kind: 'client',
      status: 400,
      message: 'invalid_grant: Invalid JWT Signature.',
    });
    expect(veo.classifyError(res({ error: { code: 404, message: 'No such object: b/o.mp4', errors: [] } }, 404))).toMatchObject({
      kind: 'client',
      status: 404,
      message: 'No such object: b/o.mp4',
    });
  });

  it('never echoes credentials', () => {
    const msg = 'Token Bearer ya29.a0AfH6SMBsecret rejected; url had ?key=AIzaSyA1234567890abcdefghijklmnopqrstu&access_token=abc';
    const v = veo.classifyError(res(google(400, 'INVALID_ARGUMENT', msg), 400));
    // Kept as the vendor wrote it: the core's redactor hides credentials before a client or a log sees it.
    expect(redactorFor(upstream()).text(v.message)).not.toMatch(/ya29\.a0AfH6SMBsecret|AIzaSyA|access_token=abc/);
  });
});
