import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Executor } from '../../../src/http/executor.js';
import type { SimServer } from '../../../src/sim/framework.js';
import { sampleMp4 } from '../../../src/sim/media.js';
import type { TaskRef } from '../../../src/video/types.js';
import { videoModule } from '../../../src/video/vendors/sora/index.js';
import { redactorFor } from '../../../src/core/redact.js';
import { makeInput, makeUpstream, runJob } from '../../kit/video.js';

const vendor = videoModule.vendor;
let sim: SimServer;
let executor: Executor;
let up: ReturnType<typeof makeUpstream>;

beforeAll(async () => {
  sim = await videoModule.simulator.start({ taskMs: 120 });
  executor = new Executor();
  const demo = videoModule.simulator.demo(sim);
  up = makeUpstream({ baseUrl: sim.url, apiKey: demo.apiKey, options: demo.options });
});
afterAll(async () => {
  await executor.close();
  await sim.close();
});
beforeEach(() => {
  sim.reset();
  delete sim.settings.videoBytes;
});

async function finishedTask(prompt = 'a lighthouse at dusk'): Promise<TaskRef> {
  const { task, final } = await runJob(vendor, executor, up, makeInput({ std: { prompt } }));
  expect(final.state).toBe('completed');
  return task;
}

describe('sora over real HTTP', () => {
  it('creates, polls to completion and downloads the exact MP4', async () => {
    const input = makeInput({ std: { seconds: 8, size: { width: 1280, height: 720 } }, native: { user: 'end-user-1' } });
    const { task, final, seen } = await runJob(vendor, executor, up, input);

    const created = sim.lastReceived('POST', '/v1/videos')!;
    expect(created.headers['authorization']).toBe('Bearer sim-key');
    expect(created.json).toEqual({ model: 'sora-2', prompt: input.std.prompt, seconds: '8', size: '1280x720', user: 'end-user-1' });
    expect(seen.some((s) => s.state === 'processing')).toBe(true);

    if (final.state !== 'completed') throw new Error(`unexpected ${final.state}`);
    expect(final.seconds).toBe(8);
    expect(final.vendorData.seconds).toBe('8');
    expect(typeof final.vendorData.sim_trace_id).toBe('string');

    const content = vendor.buildContent(task, final.outputs[0]!, up);
    const bytes = await executor.sendRaw(content, 5_000);
    expect(bytes.status).toBe(200);
    expect(bytes.headers['content-type']).toBe('video/mp4');
    expect(bytes.raw.equals(sampleMp4())).toBe(true);
    expect(sim.lastReceived('GET', `/v1/videos/${task.taskId}/content`)!.headers['authorization']).toBe('Bearer sim-key');
  });

  it('bills the vendor default of 4 seconds when none was asked for', async () => {
    const input = makeInput({});
    const { final } = await runJob(vendor, executor, up, input);
    expect(sim.lastReceived('POST', '/v1/videos')!.json.seconds).toBeUndefined();
    expect(final).toMatchObject({ state: 'completed', seconds: 4 });
    expect(vendor.estimateSeconds(input)).toBe(4);
  });

  it('sends a first frame as input_reference', async () => {
    const input = makeInput({ std: { frameImages: [{ url: 'https://img.example/f.png', frameType: 'first_frame' }] } });
    await runJob(vendor, executor, up, input);
    expect(sim.lastReceived('POST', '/v1/videos')!.json.input_reference).toEqual({ image_url: 'https://img.example/f.png' });
  });

  it('fails jobs with the stable code for every outcome the simulator can produce', async () => {
    const cases = [
      ['[moderation]', 'content_policy_violation', 'moderation_blocked'],
      ['[fail]', 'generation_failed', 'internal_error'],
      ['[bad-image]', 'invalid_media', 'invalid_input_reference'],
      ['[bad-combo]', 'unsupported_parameters', 'unsupported_parameters'],
    ] as const;
    await Promise.all(
      cases.map(async ([marker, code, vendorCode]) => {
        const { final } = await runJob(vendor, executor, up, makeInput({ std: { prompt: `a cat ${marker}` } }));
        if (final.state !== 'failed') throw new Error(`${marker} ended ${final.state}`);
        expect(final.code).toBe(code);
        expect(final.message.length).toBeGreaterThan(0);
        expect((final.vendorData.error as { code: string }).code).toBe(vendorCode);
      }),
    );
  });

  it('classifies the native create-time answers: moderation, bad seconds, wrong key', async () => {
    const mod = await executor.send(vendor.buildCreate(makeInput({ std: { prompt: 'x [moderation-create]' } }), up), 5_000);
    expect(mod.status).toBe(400);
    expect(vendor.classifyError(mod)).toMatchObject({ kind: 'moderation', code: 'moderation_blocked' });

    // An integer seconds is what a naive translation would send; the simulator rejects it as OpenAI does.
    const raw = vendor.buildCreate(makeInput({}), up);
    const badType = await executor.send({ ...raw, body: { ...(raw.body as object), seconds: 8 } }, 5_000);
    expect(vendor.classifyError(badType)).toMatchObject({ kind: 'client', status: 400, param: 'seconds', code: 'invalid_type' });

    const wrongKey = 'sk-wrong-key-123456789';
    const denied = await executor.send(vendor.buildCreate(makeInput({}), { ...up, apiKey: wrongKey }), 5_000);
    const verdict = vendor.classifyError(denied);
    expect(verdict).toMatchObject({ kind: 'auth', status: 401 });
    // The core's redactor hides it (as any sk- key) before a client or a log sees the message.
    expect(redactorFor(up).text(verdict.message)).not.toContain('6789');
  });

  it('refuses content before completion and for unknown ids', async () => {
    const created = await executor.send(vendor.buildCreate(makeInput({}), up), 5_000);
    const ref = vendor.parseCreate(created, makeInput({}), up);
    const early = await executor.send(vendor.buildContent({ ...ref, model: 'sora-2', upstreamModel: 'sora-2', meta: {} }, {}, up), 5_000);
    expect(vendor.classifyError(early)).toMatchObject({ kind: 'client', status: 400 });
    const missing = await executor.send(vendor.buildPoll({ taskId: 'video_nope', model: 'sora-2', upstreamModel: 'sora-2', meta: {} }, up), 5_000);
    expect(vendor.classifyError(missing)).toMatchObject({ kind: 'client', status: 404 });
  });

  it('serves byte ranges and 416 like the vendor storage', async () => {
    const task = await finishedTask();
    const req = vendor.buildContent(task, {}, up);
    const size = sampleMp4().length;
    const part = await executor.sendRaw({ ...req, headers: { ...req.headers, Range: 'bytes=10-99' } }, 5_000);
    expect(part.status).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 10-99/${size}`);
    expect(part.raw.equals(sampleMp4().subarray(10, 100))).toBe(true);
    const tail = await executor.sendRaw({ ...req, headers: { ...req.headers, Range: 'bytes=-16' } }, 5_000);
    expect(tail.raw.equals(sampleMp4().subarray(size - 16))).toBe(true);
    const beyond = await executor.sendRaw({ ...req, headers: { ...req.headers, Range: `bytes=${size}-` } }, 5_000);
    expect(beyond.status).toBe(416);
    expect(beyond.headers['content-range']).toBe(`bytes */${size}`);
  });

  it('streams a large synthetic video without truncation', async () => {
    const task = await finishedTask();
    sim.settings.videoBytes = 5 * 1024 * 1024 + 3;
    const res = await executor.stream(vendor.buildContent(task, {}, up), 10_000);
    let total = 0;
    let head: Buffer | undefined;
    for await (const chunk of res.body) {
      head ??= chunk as Buffer;
      total += (chunk as Buffer).length;
    }
    expect(res.status).toBe(200);
    expect(total).toBe(5 * 1024 * 1024 + 3);
    expect(head!.subarray(0, 8).equals(sampleMp4().subarray(0, 8))).toBe(true);
  });

  it('classifies injected 5xx and 429 faults as retryable', async () => {
    sim.inject({ kind: 'status', status: 503, json: { error: { message: 'The server is overloaded.', type: 'server_error' } } });
    const res = await executor.send(vendor.buildCreate(makeInput({}), up), 5_000);
    expect(vendor.classifyError(res)).toMatchObject({ kind: 'retryable', status: 503 });
    sim.inject({ kind: 'status', status: 429, headers: { 'retry-after': '3' }, json: { error: { message: 'Rate limit reached', type: 'requests' } } });
    const limited = await executor.send(vendor.buildCreate(makeInput({}), up), 5_000);
    expect(vendor.classifyError(limited)).toMatchObject({ kind: 'retryable', status: 429, retryAfterSeconds: 3 });
  });

  it('speaks the protocol the official OpenAI SDK uses (multipart create, retrieve, download)', async () => {
    const client = new OpenAI({ apiKey: 'sim-key', baseURL: `${sim.url}/v1`, maxRetries: 0 });
    const job = await client.videos.create({ model: 'sora-2', prompt: 'waves on a shore', seconds: '8', size: '1280x720' });
    expect(sim.lastReceived('POST', '/v1/videos')!.headers['content-type']).toMatch(/^multipart\/form-data/);
    expect(job.status).toBe('queued');
    let current = job;
    for (let i = 0; i < 200 && current.status !== 'completed' && current.status !== 'failed'; i++) {
      await new Promise((r) => setTimeout(r, 20));
      current = await client.videos.retrieve(job.id);
    }
    expect(current).toMatchObject({ status: 'completed', seconds: '8', size: '1280x720', progress: 100 });
    const body = await client.videos.downloadContent(job.id);
    expect(Buffer.from(await body.arrayBuffer()).equals(sampleMp4())).toBe(true);
  });
});
