import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/core/json.js';
import { Executor } from '../../../src/http/executor.js';
import type { CredentialSource, Upstream, UpstreamRequest, UpstreamResponse } from '../../../src/http/types.js';
import { sleep, type SimServer } from '../../../src/sim/framework.js';
import { sampleMp4, samplePng } from '../../../src/sim/media.js';
import type { CreateInput, TaskRef, VendorStatus } from '../../../src/video/types.js';
import { videoModule } from '../../../src/video/vendors/veo/index.js';
import { input, upstream } from '../../kit/veo.js';

const veo = videoModule.vendor;
const executor = new Executor();
let sim: SimServer;
let up: Upstream;
let creds: CredentialSource;

beforeAll(async () => {
  sim = await videoModule.simulator.start({ taskMs: 120 });
  const demo = videoModule.simulator.demo(sim);
  // The demo settings as they are, minus the default bucket: each test picks inline or gs:// output.
  const { storage_uri: _bucket, ...options } = demo.options;
  up = upstream(options, { baseUrl: sim.url });
  creds = veo.credentials!(up, executor);
});
afterEach(() => {
  sim.reset();
  delete sim.settings['videoBytes'];
});
afterAll(async () => {
  await sim.close();
  await executor.close();
});

/** What the core does: the adapter's request plus the upstream's credential headers. */
async function send(req: UpstreamRequest, source = creds): Promise<UpstreamResponse> {
  return executor.send({ ...req, headers: { ...req.headers, ...(await source.headers()) } }, 5_000);
}

async function run(i: CreateInput, target = up): Promise<{ task: TaskRef; status: VendorStatus; polls: number }> {
  const created = await send(veo.buildCreate(i, target));
  expect(created.status, created.text).toBe(200);
  const { taskId, meta } = veo.parseCreate(created, i, target);
  const task: TaskRef = { taskId, model: i.model, upstreamModel: i.upstreamModel, meta: meta ?? {} };
  for (let polls = 1; polls < 200; polls++) {
    const res = await send(veo.buildPoll(task, target));
    expect(res.status, res.text).toBe(200);
    const status = veo.parsePoll(res, task, target);
    if ('next' in status) throw new Error('unexpected follow-up request');
    if (status.state !== 'processing') return { task, status, polls };
    await sleep(20);
  }
  throw new Error('the job never finished');
}

async function content(task: TaskRef, url: string, range?: string) {
  const req = veo.buildContent(task, { url, mimeType: 'video/mp4' }, up);
  const withAuth = { ...req, headers: { ...req.headers, ...(await creds.headers()), ...(range ? { range } : {}) } };
  return executor.sendRaw(withAuth, 5_000);
}

describe('veo over HTTP against the simulator', () => {
  it('gs:// output: service-account token, create, poll to completion, bytes through the storage API', async () => {
    const i = input({ std: { seconds: 6 }, native: { storageUri: 'gs://rt-bucket/runs/' } });
    const { task, status, polls } = await run(i);
    expect(polls).toBeGreaterThan(1);
    expect(status.state).toBe('completed');
    if (status.state !== 'completed') return;
    expect(status).toMatchObject({ seconds: 6, billableSeconds: 6 });
    expect(status.outputs).toHaveLength(1);
    expect(status.outputs[0]!.url).toMatch(/^gs:\/\/rt-bucket\/runs\/[0-9a-f-]+\/sample_0\.mp4$/);
    expect(status.vendorData).toMatchObject({ sim_trace_id: expect.any(String), response: { sim_model_version: 'sim-veo-1' } });

    const got = await content(task, status.outputs[0]!.url!);
    expect(got.status).toBe(200);
    expect(got.raw.equals(sampleMp4())).toBe(true);

    // What the upstream saw: one verified token exchange, then Bearer calls on the real paths.
    expect(sim.received('POST', '/token')).toHaveLength(1);
    const create = sim.lastReceived('POST', /:predictLongRunning$/)!;
    expect(create.path).toBe('/v1/projects/veo-sim-project/locations/us-central1/publishers/google/models/veo-3.1-generate-001:predictLongRunning');
    expect(create.headers['authorization']).toMatch(/^Bearer ya29\.sim-/);
    expect(create.json).toEqual({
      instances: [{ prompt: 'a red fox running through snow' }],
      parameters: { durationSeconds: 6, generateAudio: true, storageUri: 'gs://rt-bucket/runs/' },
    });
    const pollReq = sim.lastReceived('POST', /:fetchPredictOperation$/)!;
    expect(pollReq.json).toEqual({ operationName: task.taskId });
    expect(task.taskId).toMatch(/^projects\/veo-sim-project\/locations\/us-central1\/publishers\/google\/models\/veo-3\.1-generate-001\/operations\//);
    const download = sim.lastReceived('GET', /^\/storage\/v1\/b\/rt-bucket\/o\//)!;
    expect(download.query.get('alt')).toBe('media');
    expect(download.headers['authorization']).toBe(create.headers['authorization']);
  });

  it('honours Range on stored objects (206 and 416)', async () => {
    const { task, status } = await run(input({ native: { storage_uri: 'gs://rt-bucket/r/' } }));
    if (status.state !== 'completed') throw new Error(status.state);
    const url = status.outputs[0]!.url!;
    const part = await content(task, url, 'bytes=10-99');
    expect(part.status).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 10-99/${sampleMp4().length}`);
    expect(part.raw.equals(sampleMp4().subarray(10, 100))).toBe(true);
    const beyond = await content(task, url, `bytes=${sampleMp4().length + 5}-`);
    expect(beyond.status).toBe(416);
    expect(veo.classifyError({ ...beyond, json: JSON.parse(beyond.raw.toString()), text: beyond.raw.toString() }).kind).toBe('client');
  });

  it('inline output: no storageUri means base64 in the operation, handed over as inlineBase64', async () => {
    const { status } = await run(input({ std: { seconds: 4 } }));
    if (status.state !== 'completed') throw new Error(status.state);
    expect(status.outputs).toHaveLength(1);
    const text = status.outputs[0]!.inlineBase64;
    if (typeof text !== 'string') throw new Error('a small answer is parsed whole: its base64 is a string');
    expect(Buffer.from(text, 'base64').equals(sampleMp4())).toBe(true);
    expect(JSON.stringify(status.vendorData)).not.toContain(text.slice(0, 200));
    expect(status).toMatchObject({ seconds: 4, billableSeconds: 4 });
  });

  it('sampleCount 3: three outputs, billed three times the requested duration', async () => {
    const i = input({ std: { seconds: 8 }, native: { sample_count: 3, storageUri: 'gs://rt-bucket/multi/' } });
    expect(veo.estimateSeconds(i)).toBe(24);
    const { task, status } = await run(i);
    if (status.state !== 'completed') throw new Error(status.state);
    expect(status.outputs.map((o) => o.url!.replace(/^.*\//, ''))).toEqual(['sample_0.mp4', 'sample_1.mp4', 'sample_2.mp4']);
    expect(status).toMatchObject({ seconds: 8, billableSeconds: 24 });
    expect(((status.vendorData['response'] as JsonObject)['videos'] as unknown[]).length).toBe(3);
    expect((await content(task, status.outputs[2]!.url!)).raw.equals(sampleMp4())).toBe(true);
    expect(sim.lastReceived('POST', /:predictLongRunning$/)!.json.parameters.sampleCount).toBe(3);
  });

  it('a filtered sample is neither returned nor billed', async () => {
    const i = input({ std: { prompt: 'two takes [filter-one]', seconds: 6 }, native: { sampleCount: 2 } });
    const { status } = await run(i);
    if (status.state !== 'completed') throw new Error(status.state);
    expect(status.outputs).toHaveLength(1);
    expect(status).toMatchObject({ seconds: 6, billableSeconds: 6, vendorData: { response: { raiMediaFilteredCount: 1 } } });
  });

  it('a first frame fetched by the gateway reaches Vertex as base64 with its mime type', async () => {
    const url = 'https://images.example/first.png';
    const i = input({
      std: { frameImages: [{ url, frameType: 'first_frame' }] },
      media: { [url]: { base64: samplePng().toString('base64'), mimeType: 'image/png' } },
    });
    expect(veo.inlineMedia!(i)).toEqual([url]);
    const { status } = await run(i);
    expect(status.state).toBe('completed');
    const inst = sim.lastReceived('POST', /:predictLongRunning$/)!.json.instances[0];
    expect(Buffer.from(inst.image.bytesBase64Encoded, 'base64').equals(samplePng())).toBe(true);
    expect(inst.image.mimeType).toBe('image/png');
  });

  it('maps every simulated failure outcome', async () => {
    const outcomes: [string, string][] = [
      ['[moderation]', 'content_policy_violation'],
      ['[fail]', 'generation_failed'],
      ['[bad-image]', 'invalid_media'],
      ['[bad-combo]', 'unsupported_parameters'],
    ];
    for (const [marker, code] of outcomes) {
      const { status } = await run(input({ std: { prompt: `a scene ${marker}` } }));
      expect(status, marker).toMatchObject({ state: 'failed', code });
    }
    const { status } = await run(input({ std: { prompt: 'boom [fail]' } }));
    expect(status.vendorData).toMatchObject({ error: { code: 13 } });
  });

  it('the demo upstream settings work end to end, default bucket included', async () => {
    const demo = videoModule.simulator.demo(sim);
    expect(demo.models.map((m) => m.name)).toContain('veo-3.1-generate-001');
    for (const m of demo.models) expect(m.pricePerSecond).toBeGreaterThan(0);
    const demoUp = upstream(demo.options, { baseUrl: sim.url, name: 'veo-demo' });
    const demoCreds = veo.credentials!(demoUp, executor);
    const i = input({ model: 'veo-2.0-generate-001', std: { seconds: 5 } });
    const created = await send(veo.buildCreate(i, demoUp), demoCreds);
    expect(created.status, created.text).toBe(200);
    expect(sim.lastReceived('POST', /:predictLongRunning$/)!.json.parameters).toEqual({
      durationSeconds: 5,
      storageUri: 'gs://veo-sim-output/videos/',
    });
  });

  it('big stored videos stream through unchanged in size', async () => {
    sim.settings['videoBytes'] = 5 * 1024 * 1024 + 7;
    const { task, status } = await run(input({ native: { storageUri: 'gs://rt-bucket/big/' } }));
    if (status.state !== 'completed') throw new Error(status.state);
    const req = veo.buildContent(task, status.outputs[0]!, up);
    const res = await executor.stream({ ...req, headers: { ...req.headers, ...(await creds.headers()) } }, 5_000);
    expect(res.status).toBe(200);
    let size = 0;
    let head: Buffer | undefined;
    for await (const chunk of res.body) {
      head ??= chunk as Buffer;
      size += (chunk as Buffer).length;
    }
    expect(size).toBe(5 * 1024 * 1024 + 7);
    expect(head!.subarray(0, 8).equals(sampleMp4().subarray(0, 8))).toBe(true);
  });
});

describe('veo errors over HTTP', () => {
  it('a wrong static token gets the native 401, classified as auth; the static sim key passes', async () => {
    const wrong = veo.credentials!({ ...up, options: { ...up.options, service_account: null, access_token: 'ya29.wrong' } }, executor);
    const res = await send(veo.buildCreate(input(), up), wrong);
    expect(res.status).toBe(401);
    expect(res.json).toMatchObject({ error: { code: 401, status: 'UNAUTHENTICATED' } });
    expect(veo.classifyError(res)).toMatchObject({ kind: 'auth', status: 401 });
    expect(veo.classifyError(res).message).not.toContain('ya29.wrong');

    const viaApiKey = veo.credentials!({ ...up, apiKey: 'sim-key', options: { project: 'acme-video' } }, executor);
    expect((await send(veo.buildCreate(input(), up), viaApiKey)).status).toBe(200);
  });

  it('upstream 400s are the client\'s; unknown models are a 404 without the project', async () => {
    const badDuration = await send(veo.buildCreate(input({ std: { seconds: 5 } }), up));
    expect(badDuration.status).toBe(400);
    expect(veo.classifyError(badDuration)).toMatchObject({ kind: 'client', status: 400, message: expect.stringContaining('duration') });

    const unknown = await send(veo.buildCreate(input({ model: 'imagen-3.0-generate-002' }), up));
    expect(unknown.status).toBe(404);
    const verdict = veo.classifyError(unknown);
    expect(verdict).toMatchObject({ kind: 'client', status: 404 });
    expect(verdict.message).not.toContain('veo-sim-project');
    expect(verdict.message).toContain('imagen-3.0-generate-002');
  });

  it('injected 503 and 429 are retryable, with the Retry-After the upstream gave', async () => {
    sim.inject({ kind: 'status', status: 503, json: { error: { code: 503, message: 'The service is currently unavailable.', status: 'UNAVAILABLE' } } }, 1, /predictLongRunning/);
    const unavailable = await send(veo.buildCreate(input(), up));
    expect(veo.classifyError(unavailable)).toMatchObject({ kind: 'retryable', status: 503 });

    sim.inject(
      { kind: 'status', status: 429, headers: { 'retry-after': '7' }, json: { error: { code: 429, message: 'Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model', status: 'RESOURCE_EXHAUSTED' } } },
      1,
      /predictLongRunning/,
    );
    const limited = await send(veo.buildCreate(input(), up));
    expect(veo.classifyError(limited)).toMatchObject({ kind: 'retryable', status: 429, retryAfterSeconds: 7 });
  });

  it('an unknown operation is a 404; a missing object is a 404 from storage', async () => {
    const ghost: TaskRef = {
      taskId: 'projects/acme-video/locations/us-central1/publishers/google/models/veo-3.1-generate-001/operations/00000000-0000-0000-0000-000000000000',
      model: 'veo-3.1-generate-001',
      upstreamModel: 'veo-3.1-generate-001',
      meta: {},
    };
    const res = await send(veo.buildPoll(ghost, up));
    expect(veo.classifyError(res)).toMatchObject({ kind: 'client', status: 404 });
    const missing = await content(ghost, 'gs://rt-bucket/none.mp4');
    expect(missing.status).toBe(404);
  });
});
