import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Executor } from '../../../src/http/executor.js';
import type { SimServer } from '../../../src/sim/framework.js';
import { sampleMp4, samplePng } from '../../../src/sim/media.js';
import type { InlineMedia } from '../../../src/video/types.js';
import { readBody } from '../../../src/sim/openai-videos.js';
import { makeInput, makeUpstream, runJob } from '../../kit/video.js';
import { videoModule } from '../../../src/video/vendors/azure-sora/index.js';

const vendor = videoModule.vendor;
let sim: SimServer;
let executor: Executor;
let up: ReturnType<typeof makeUpstream>;
const input = (o: Parameters<typeof makeInput>[0] = {}) => makeInput({ model: 'sora', ...o });
const RUNNING = ['queued', 'preprocessing', 'running', 'processing'];

beforeAll(async () => {
  sim = await videoModule.simulator.start({ taskMs: 200 });
  executor = new Executor();
  const demo = videoModule.simulator.demo(sim);
  up = makeUpstream({ vendor: 'azure-sora', baseUrl: sim.url, apiKey: demo.apiKey, options: demo.options });
});
afterAll(async () => {
  await executor.close();
  await sim.close();
});
beforeEach(() => sim.reset());

describe('azure-sora over real HTTP', () => {
  it('creates with integer fields, polls every status to success and downloads every variant', async () => {
    const i = input({ std: { seconds: 8, size: { width: 1280, height: 720 } }, native: { n_variants: 2, user: 'end-user-1' } });
    const { task, final, polls } = await runJob(vendor, executor, up, i, { pollMs: 10 });

    const created = sim.lastReceived('POST', '/openai/v1/video/generations/jobs')!;
    expect(created.headers['api-key']).toBe('sim-key');
    expect(created.query.get('api-version')).toBe('preview');
    expect(created.json).toEqual({ model: 'sora', prompt: i.std.prompt, width: 1280, height: 720, n_seconds: 8, n_variants: 2, user: 'end-user-1' });

    const vendorStatuses = new Set(polls.map((p) => (p.json as { status: string }).status));
    vendorStatuses.delete('succeeded');
    expect(vendorStatuses.size).toBeGreaterThanOrEqual(2);
    for (const s of vendorStatuses) expect(RUNNING).toContain(s);

    if (final.state !== 'completed') throw new Error(`unexpected ${final.state}`);
    expect([final.seconds, final.billableSeconds, final.outputs.length]).toEqual([8, 16, 2]);
    const gens = final.vendorData.generations as { id: string; sim_seed: number }[];
    expect(gens.map((g) => g.sim_seed)).toEqual([1, 2]);
    expect(typeof final.vendorData.sim_trace_id).toBe('string');

    for (const [n, output] of final.outputs.entries()) {
      const res = await executor.sendRaw(vendor.buildContent(task, output, up), 5_000);
      expect(res.status).toBe(200);
      expect(res.raw.equals(sampleMp4())).toBe(true);
      const got = sim.lastReceived('GET', `/openai/v1/video/generations/${gens[n]!.id}/content/video`)!;
      expect([got.headers['api-key'], got.query.get('api-version')]).toEqual(['sim-key', 'preview']);
    }
  });

  it('bills the default of 5 seconds when none was asked for', async () => {
    const i = input();
    const { final } = await runJob(vendor, executor, up, i);
    expect(final).toMatchObject({ state: 'completed', seconds: 5, billableSeconds: 5 });
    expect(vendor.estimateSeconds(i)).toBe(5);
  });

  it('uploads a first frame as multipart that the jobs API accepts', async () => {
    const url = 'https://img.example/first.png';
    const media = new Map<string, InlineMedia>([[url, { base64: samplePng().toString('base64'), mimeType: 'image/png' }]]);
    const i = input({ std: { size: { width: 854, height: 480 }, frameImages: [{ url, frameType: 'first_frame' }] }, media });
    const { final } = await runJob(vendor, executor, up, i);
    expect(final.state).toBe('completed');
    const body = (await readBody(sim.lastReceived('POST', '/openai/v1/video/generations/jobs')!))!;
    expect(body.multipart).toBe(true);
    expect(body.fields).toMatchObject({ model: 'sora', width: '854', height: '480', n_seconds: '5' });
    expect(body.files).toHaveLength(1);
    expect(body.files[0]!.data.equals(samplePng())).toBe(true);
    expect(final.vendorData.inpaint_items).toEqual([
      { frame_index: 0, type: 'image', file_name: 'first_frame.png', crop_bounds: { left_fraction: 0, top_fraction: 0, right_fraction: 1, bottom_fraction: 1 } },
    ]);
  });

  it('fails jobs with the stable code for every outcome the simulator can produce', async () => {
    const cases = [
      ['[moderation]', 'content_policy_violation', 'output_moderation'],
      ['[fail]', 'generation_failed', 'internal_error'],
      ['[bad-image]', 'invalid_media', 'invalid_input_media'],
      ['[bad-combo]', 'unsupported_parameters', 'unsupported_dimensions'],
    ] as const;
    await Promise.all(
      cases.map(async ([marker, code, reason]) => {
        const { final } = await runJob(vendor, executor, up, input({ std: { prompt: `a cat ${marker}` } }));
        expect(final).toMatchObject({ state: 'failed', code });
        expect(final.vendorData.failure_reason).toBe(reason);
      }),
    );
  });

  it('maps a job cancelled upstream to cancelled', async () => {
    const i = input();
    const created = await executor.send(vendor.buildCreate(i, up), 5_000);
    const ref = vendor.parseCreate(created, i, up);
    const del = await executor.send({ method: 'DELETE', url: `${sim.url}/openai/v1/video/generations/jobs/${ref.taskId}?api-version=preview`, headers: { 'api-key': 'sim-key' } }, 5_000);
    expect(del.status).toBe(204);
    const poll = await executor.send(vendor.buildPoll({ ...ref, model: 'sora', upstreamModel: 'sora', meta: ref.meta ?? {} }, up), 5_000);
    expect(vendor.parsePoll(poll, { ...ref, model: 'sora', upstreamModel: 'sora', meta: ref.meta ?? {} }, up)).toMatchObject({ state: 'failed', code: 'cancelled' });
  });

  it('classifies the native create-time answers', async () => {
    const mod = await executor.send(vendor.buildCreate(input({ std: { prompt: 'x [moderation-create]' } }), up), 5_000);
    expect(vendor.classifyError(mod)).toMatchObject({ kind: 'moderation', code: 'content_filter' });

    const combo = await executor.send(vendor.buildCreate(input({ std: { size: { width: 1920, height: 1080 } }, native: { n_variants: 3 } }), up), 5_000);
    expect(vendor.classifyError(combo)).toMatchObject({ kind: 'client', status: 400 });

    const wrong = await executor.send(vendor.buildCreate(input(), { ...up, apiKey: 'ffffffffffffffffffffffffffffffff' }), 5_000);
    expect(vendor.classifyError(wrong)).toMatchObject({ kind: 'auth', status: 401 });

    const noDeployment = await executor.send(vendor.buildCreate(input({ model: 'sora-lite', upstreamModel: 'not-deployed' }), up), 5_000);
    expect(vendor.classifyError(noDeployment)).toMatchObject({ kind: 'auth', status: 404 });

    const oldVersion = await executor.send(vendor.buildCreate(input(), { ...up, options: { api_version: '2023-05-15' } }), 5_000);
    expect(vendor.classifyError(oldVersion)).toMatchObject({ kind: 'auth', status: 400 });
  });

  it('serves byte ranges and 416, and 404 for unknown generations', async () => {
    const { task, final } = await runJob(vendor, executor, up, input());
    if (final.state !== 'completed') throw new Error(final.state);
    const req = vendor.buildContent(task, final.outputs[0]!, up);
    const size = sampleMp4().length;
    const part = await executor.sendRaw({ ...req, headers: { ...req.headers, Range: 'bytes=100-' } }, 5_000);
    expect(part.status).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 100-${size - 1}/${size}`);
    expect(part.raw.equals(sampleMp4().subarray(100))).toBe(true);
    const beyond = await executor.sendRaw({ ...req, headers: { ...req.headers, Range: `bytes=${size + 5}-${size + 9}` } }, 5_000);
    expect(beyond.status).toBe(416);
    const missing = await executor.send(vendor.buildContent(task, { url: `${sim.url}/openai/v1/video/generations/gen_nope/content/video` }, up), 5_000);
    expect(vendor.classifyError(missing)).toMatchObject({ kind: 'client', status: 404 });
  });

  it('classifies injected throttling with its retry-after-ms', async () => {
    sim.inject({ kind: 'status', status: 429, headers: { 'retry-after-ms': '2500' }, json: { error: { code: '429', message: 'Requests exceeded the rate limit.' } } });
    const res = await executor.send(vendor.buildCreate(input(), up), 5_000);
    expect(vendor.classifyError(res)).toMatchObject({ kind: 'retryable', status: 429, retryAfterSeconds: 2.5 });
  });
});
