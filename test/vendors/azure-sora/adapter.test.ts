import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import type { JsonObject } from '../../../src/core/json.js';
import type { UpstreamRequest } from '../../../src/http/types.js';
import { samplePng } from '../../../src/sim/media.js';
import type { InlineMedia, TaskRef } from '../../../src/video/types.js';
import { redactorFor } from '../../../src/core/redact.js';
import { jsonResponse, makeInput, makeUpstream } from '../../kit/video.js';
import { azureSoraVendor as v } from '../../../src/video/vendors/azure-sora/adapter.js';

const KEY = '0123456789abcdef0123456789abcdef';
const up = makeUpstream({ vendor: 'azure-sora', baseUrl: 'https://myres.openai.azure.com', apiKey: KEY });
const JOBS = 'https://myres.openai.azure.com/openai/v1/video/generations/jobs?api-version=preview';
const PROMPT = 'a red fox running through snow';
const input = (o: Parameters<typeof makeInput>[0] = {}) => makeInput({ model: 'sora', ...o });
const task: TaskRef = { taskId: 'task_01abc', model: 'sora', upstreamModel: 'sora', meta: { api_version: 'preview', n_seconds: 5 } };
const png: InlineMedia = { base64: samplePng().toString('base64'), mimeType: 'image/png' };

function catchError(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (e) {
    if (e instanceof GatewayError) return e;
    throw e;
  }
  throw new Error('expected a GatewayError');
}

async function form(req: UpstreamRequest): Promise<FormData> {
  return new Response(new Uint8Array(req.body as Buffer), { headers: { 'content-type': req.headers['Content-Type']! } }).formData();
}

/** A real-shaped job object as GET .../jobs/{id} returns it. */
function job(over: JsonObject): JsonObject {
  return {
    object: 'video.generation.job',
    id: 'task_01abc',
    status: 'queued',
    created_at: 1748469875,
    finished_at: null,
    expires_at: null,
    generations: [],
    prompt: PROMPT,
    model: 'sora',
    n_variants: 1,
    n_seconds: 5,
    height: 720,
    width: 1280,
    failure_reason: null,
    ...over,
  };
}

function gen(id: string, nSeconds: number): JsonObject {
  return { object: 'video.generation', id, job_id: 'task_01abc', created_at: 1748469960, width: 1280, height: 720, n_seconds: nSeconds, prompt: PROMPT };
}

describe('azure-sora buildCreate', () => {
  it('posts JSON to the jobs API with the api-key header and the required fields', () => {
    const req = v.buildCreate(input(), up);
    expect(req.method).toBe('POST');
    expect(req.url).toBe(JOBS);
    expect(req.headers).toEqual({ 'api-key': KEY, 'Content-Type': 'application/json' });
    expect(req.body).toEqual({ model: 'sora', prompt: PROMPT, width: 480, height: 480, n_seconds: 5 });
  });

  it('turns size into integer width/height and seconds into integer n_seconds, sending neither', () => {
    const req = v.buildCreate(input({ std: { seconds: 8, size: { width: 1280, height: 720 } } }), up);
    expect(req.body).toEqual({ model: 'sora', prompt: PROMPT, width: 1280, height: 720, n_seconds: 8 });
  });

  it('lets native n_seconds, width and height win over the standard fields', () => {
    const req = v.buildCreate(
      input({ std: { seconds: 8, size: { width: 1280, height: 720 } }, native: { n_seconds: 12, width: 854, height: 480, n_variants: 2 } }),
      up,
    );
    expect(req.body).toEqual({ model: 'sora', prompt: PROMPT, width: 854, height: 480, n_seconds: 12, n_variants: 2 });
  });

  it('completes a size from aspect_ratio and resolution sent alone', () => {
    const body = (std: Parameters<typeof makeInput>[0]['std']) => v.buildCreate(input({ std }), up).body as JsonObject;
    expect(body({ resolution: 480 })).toMatchObject({ width: 854, height: 480 });
    expect(body({ aspectRatio: '1:1' })).toMatchObject({ width: 720, height: 720 });
  });

  it('maps the model to a deployment and reads api_version and default_size from the options', () => {
    const custom = makeUpstream({
      baseUrl: 'https://other.openai.azure.com',
      apiKey: KEY,
      options: { api_version: '2025-05-01-preview', deployments: { sora: 'sora-eastus2' }, default_size: '1280x720' },
    });
    const req = v.buildCreate(input({ upstreamModel: 'sora' }), custom);
    expect(req.url).toBe('https://other.openai.azure.com/openai/v1/video/generations/jobs?api-version=2025-05-01-preview');
    expect(req.body).toMatchObject({ model: 'sora-eastus2', width: 1280, height: 720 });
    expect((v.buildCreate(input({ upstreamModel: 'my-sora-deployment' }), up).body as JsonObject).model).toBe('my-sora-deployment');
  });

  it('passes unknown native fields through at the top level unchanged', () => {
    const native = { user: 'u-7', seed: 42, metadata: { a: { b: [1, 2] } }, brand_new: true };
    const req = v.buildCreate(input({ native }), up);
    expect(req.body).toEqual({ model: 'sora', prompt: PROMPT, width: 480, height: 480, n_seconds: 5, ...native });
  });

  it('uploads a first frame as multipart with an inpaint item for frame 0', async () => {
    const url = 'https://img.example/first.png';
    const i = input({ std: { seconds: 10, size: { width: 1280, height: 720 }, frameImages: [{ url, frameType: 'first_frame' }] }, native: { n_variants: 2 } });
    expect(v.inlineMedia!(i)).toEqual([url]);
    const req = v.buildCreate({ ...i, media: new Map([[url, png]]) }, up);
    expect(req.url).toBe(JOBS);
    expect(req.headers['api-key']).toBe(KEY);
    expect(req.headers['Content-Type']).toMatch(/^multipart\/form-data; boundary=/);
    const f = await form(req);
    expect(Object.fromEntries([...f.entries()].filter(([, x]) => typeof x === 'string'))).toEqual({
      model: 'sora',
      prompt: PROMPT,
      width: '1280',
      height: '720',
      n_seconds: '10',
      n_variants: '2',
      inpaint_items: JSON.stringify([
        { frame_index: 0, type: 'image', file_name: 'first_frame.png', crop_bounds: { left_fraction: 0, top_fraction: 0, right_fraction: 1, bottom_fraction: 1 } },
      ]),
    });
    const file = f.get('files') as File;
    expect(file.name).toBe('first_frame.png');
    expect(file.type).toBe('image/png');
    expect(Buffer.from(await file.arrayBuffer()).equals(samplePng())).toBe(true);
  });

  it('lets native inpaint_items replace the first frame, uploading the items that carry a url', async () => {
    const items: JsonObject[] = [
      { frame_index: 0, type: 'image', url: 'https://img.example/a.png', crop_bounds: { left_fraction: 0.1 } },
      { frame_index: 30, type: 'video', url: 'https://vid.example/b.mp4', file_name: 'clip.mp4' },
      { frame_index: 60, type: 'image', file_name: 'kept-as-is.png' },
    ];
    const i = input({ std: { frameImages: [{ url: 'https://img.example/first.png', frameType: 'first_frame' }] }, native: { inpaint_items: items } });
    expect(v.inlineMedia!(i)).toEqual(['https://img.example/a.png', 'https://vid.example/b.mp4']);
    const media = new Map<string, InlineMedia>([
      ['https://img.example/a.png', png],
      ['https://vid.example/b.mp4', { base64: Buffer.from('mp4!').toString('base64'), mimeType: 'video/mp4' }],
    ]);
    const f = await form(v.buildCreate({ ...i, media }, up));
    expect(JSON.parse(f.get('inpaint_items') as string)).toEqual([
      { frame_index: 0, type: 'image', crop_bounds: { left_fraction: 0.1 }, file_name: 'inpaint_0.png' },
      { frame_index: 30, type: 'video', file_name: 'clip.mp4' },
      { frame_index: 60, type: 'image', file_name: 'kept-as-is.png' },
    ]);
    expect((f.getAll('files') as File[]).map((x) => x.name)).toEqual(['inpaint_0.png', 'clip.mp4']);
  });
});

describe('azure-sora validate and estimate', () => {
  const param = (o: Parameters<typeof makeInput>[0]) => {
    const e = catchError(() => v.validate!(input(o)));
    expect(e.status).toBe(400);
    return e.param;
  };

  it('checks the documented ranges', () => {
    expect(param({ native: { n_seconds: 0 } })).toBe('n_seconds');
    expect(param({ native: { duration: 25 } })).toBe('duration');
    expect(param({ native: { n_seconds: 21 } })).toBe('n_seconds');
    expect(param({ native: { n_seconds: 'ten' } })).toBe('n_seconds');
    expect(param({ std: { seconds: 4.5 } })).toBe('seconds');
    expect(param({ std: { seconds: 25 } })).toBe('seconds');
    expect(param({ native: { n_variants: 6 } })).toBe('n_variants');
    expect(param({ native: { width: -5 } })).toBe('width');
    expect(() => v.validate!(input({ std: { seconds: 20 }, native: { n_variants: '5' } }))).not.toThrow();
  });

  it('checks the resolution coupling of duration and variants', () => {
    const hd = { width: 1920, height: 1080 };
    expect(param({ std: { size: hd, seconds: 15 } })).toBe('seconds');
    expect(param({ std: { size: hd }, native: { n_seconds: 15 } })).toBe('n_seconds');
    expect(param({ std: { size: hd }, native: { n_variants: 2 } })).toBe('n_variants');
    expect(param({ std: { size: { width: 1280, height: 720 } }, native: { n_variants: 3 } })).toBe('n_variants');
    expect(() => v.validate!(input({ std: { size: { width: 1280, height: 720 }, seconds: 20 }, native: { n_variants: 2 } }))).not.toThrow();
    // Native width/height win, so they decide the class: 480p allows more variants.
    expect(() => v.validate!(input({ std: { size: hd }, native: { width: 854, height: 480, n_variants: 4 } }))).not.toThrow();
  });

  it('refuses a last frame and a malformed inpaint_items', () => {
    expect(param({ std: { frameImages: [{ url: 'https://x/l.png', frameType: 'last_frame' }] } })).toBe('frame_images');
    expect(param({ native: { inpaint_items: { frame_index: 0 } } })).toBe('inpaint_items');
  });

  it('holds n_seconds (native first) times the number of variants', () => {
    expect(v.estimateSeconds(input())).toBe(5);
    expect(v.estimateSeconds(input({ std: { seconds: 10 } }))).toBe(10);
    expect(v.estimateSeconds(input({ std: { seconds: 10 }, native: { n_seconds: '12' } }))).toBe(12);
    expect(v.estimateSeconds(input({ std: { seconds: 10 }, native: { n_variants: 2 } }))).toBe(20);
  });

  it('owns its native names', () => {
    expect([...v.ownedParams].sort()).toEqual(['height', 'inpaint_items', 'n_seconds', 'n_variants', 'width']);
  });
});

describe('azure-sora poll and content', () => {
  it('reads the job id and pins the api-version for later calls', () => {
    expect(v.parseCreate(jsonResponse(200, job({})), input(), up)).toEqual({ taskId: 'task_01abc', meta: { api_version: 'preview', n_seconds: 5 }, vendorData: job({}) });
    const changed = makeUpstream({ ...up, options: { api_version: '2025-05-01-preview' } });
    expect(v.buildPoll(task, changed)).toEqual({
      method: 'GET',
      url: 'https://myres.openai.azure.com/openai/v1/video/generations/jobs/task_01abc?api-version=preview',
      headers: { 'api-key': KEY },
    });
    expect(() => v.parseCreate(jsonResponse(200, { status: 'queued' }), input(), up)).toThrow(GatewayError);
  });

  it('maps every running status to processing, with queued apart from running', () => {
    const phases: Record<string, string | undefined> = { preprocessing: 'running', queued: 'queued', running: 'running', processing: 'running', something_new: undefined };
    for (const [status, phase] of Object.entries(phases)) {
      const payload = job({ status });
      expect(v.parsePoll(jsonResponse(200, payload), task, up)).toEqual({ state: 'processing', ...(phase ? { phase } : {}), vendorData: payload });
    }
  });

  it('maps succeeded to the generation duration and a download per generation', () => {
    const payload = job({ status: 'succeeded', n_seconds: 8, generations: [gen('gen_01a', 8)] });
    expect(v.parsePoll(jsonResponse(200, payload), task, up)).toEqual({
      state: 'completed',
      seconds: 8,
      billableSeconds: 8,
      outputs: [{ url: 'https://myres.openai.azure.com/openai/v1/video/generations/gen_01a/content/video?api-version=preview', mimeType: 'video/mp4' }],
      vendorData: payload,
    });
  });

  it('bills every variant and keeps the extra generations in vendor_data', () => {
    const payload = job({ status: 'succeeded', n_variants: 2, generations: [gen('gen_01a', 5), { ...gen('gen_01b', 5), extra: { z: 1 } }] });
    const st = v.parsePoll(jsonResponse(200, payload), task, up);
    if (!('state' in st) || st.state !== 'completed') throw new Error('not completed');
    expect([st.seconds, st.billableSeconds, st.outputs.length]).toEqual([5, 10, 2]);
    expect(st.vendorData).toEqual(payload);
  });

  it('reports succeeded without generations as completed with no outputs (the core fails it at no charge)', () => {
    const payload = job({ status: 'succeeded' });
    expect(v.parsePoll(jsonResponse(200, payload), task, up)).toMatchObject({ state: 'completed', outputs: [], vendorData: payload });
  });

  it('maps every failure reason, cancellation and the vendor message', () => {
    const cases: [string | null, string][] = [
      ['input_moderation', 'content_policy_violation'],
      ['output_moderation', 'content_policy_violation'],
      ['internal_error', 'generation_failed'],
      ['invalid_input_media', 'invalid_media'],
      ['unsupported_dimensions', 'unsupported_parameters'],
      [null, 'generation_failed'],
    ];
    for (const [reason, code] of cases) {
      const payload = job({ status: 'failed', failure_reason: reason });
      const st = v.parsePoll(jsonResponse(200, payload), task, up);
      expect(st).toMatchObject({ state: 'failed', code, vendorData: payload });
      if (reason) expect((st as { message: string }).message).toContain(reason);
    }
    const withError = job({ status: 'failed', failure_reason: 'internal_error', error: { code: 'x', message: 'GPU fell over.' } });
    expect(v.parsePoll(jsonResponse(200, withError), task, up)).toMatchObject({ message: 'GPU fell over.' });
    expect(v.parsePoll(jsonResponse(200, job({ status: 'cancelled' })), task, up)).toMatchObject({ state: 'failed', code: 'cancelled' });
  });

  it('downloads by generation id from this upstream only', () => {
    const output = { url: 'https://evil.example/openai/v1/video/generations/gen_01a/content/video?api-version=2025-05-01-preview' };
    expect(v.buildContent(task, output, up)).toEqual({
      method: 'GET',
      url: 'https://myres.openai.azure.com/openai/v1/video/generations/gen_01a/content/video?api-version=2025-05-01-preview',
      headers: { 'api-key': KEY },
    });
    expect(() => v.buildContent(task, {}, up)).toThrow(GatewayError);
  });
});

describe('azure-sora classifyError', () => {
  const az = (status: number, error: JsonObject, headers: Record<string, string> = {}) => v.classifyError(jsonResponse(status, { error }, headers));

  it('recognises the content filter at submit', () => {
    const verdict = az(400, {
      code: 'content_filter',
      message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
      innererror: { code: 'ResponsibleAIPolicyViolation' },
    });
    expect(verdict).toMatchObject({ kind: 'moderation', code: 'content_filter' });
  });

  it('treats bad keys, missing deployments and api-version problems as this upstream being unusable', () => {
    expect(az(401, { code: '401', message: 'Access denied due to invalid subscription key.' })).toMatchObject({ kind: 'auth', status: 401 });
    const denied = v.classifyError(jsonResponse(401, { statusCode: 401, message: `Access denied for key ${KEY}.` }));
    expect(denied).toMatchObject({ kind: 'auth', status: 401 });
    // Kept as the vendor wrote it: the core's redactor hides credentials before a client or a log sees it.
    expect(redactorFor(up).text(denied.message)).toBe('Access denied for key [redacted].');
    expect(az(404, { code: 'DeploymentNotFound', message: 'The API deployment for this resource does not exist.' })).toMatchObject({ kind: 'auth', status: 404 });
    expect(az(400, { code: 'MissingApiVersionParameter', message: 'The api-version query parameter is required.' })).toMatchObject({ kind: 'auth' });
  });

  it('reports the caller mistakes as client errors and retries the rest', () => {
    expect(az(400, { code: 'BadRequest', message: 'Unsupported resolution 100x100.', param: 'width' })).toEqual({
      kind: 'client',
      status: 400,
      message: 'Unsupported resolution 100x100.',
      code: 'BadRequest',
      param: 'width',
    });
    expect(az(404, { code: 'NotFound', message: 'Job task_x was not found.' })).toMatchObject({ kind: 'client', status: 404 });
    expect(az(429, { code: '429', message: 'Rate limit.' }, { 'retry-after-ms': '1500', 'retry-after': '2' })).toMatchObject({
      kind: 'retryable',
      status: 429,
      retryAfterSeconds: 1.5,
    });
    expect(az(500, { code: 'InternalServerError', message: 'boom' })).toMatchObject({ kind: 'retryable', status: 500 });
  });
});
