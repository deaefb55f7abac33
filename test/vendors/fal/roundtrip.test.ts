import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/core/json.js';
import { Executor } from '../../../src/http/executor.js';
import type { Upstream, UpstreamVerdict } from '../../../src/http/types.js';
import { sleep, type SimServer } from '../../../src/sim/framework.js';
import { sampleMp4 } from '../../../src/sim/media.js';
import type { CreateInput, FailureCode, TaskRef, VendorStatus } from '../../../src/video/types.js';
import { videoModule } from '../../../src/video/vendors/fal/index.js';
import { falInput, falUpstream } from '../../kit/fal.js';

const fal = videoModule.vendor;
let sim: SimServer;
const ex = new Executor();

beforeAll(async () => {
  sim = await videoModule.simulator.start({ taskMs: 80 });
});
afterAll(async () => {
  await sim.close();
  await ex.close();
});
beforeEach(() => {
  sim.reset();
  for (const k of ['queueOrigin', 'videoBytes', 'reportDuration']) delete sim.settings[k];
});

const upstream = (options: JsonObject = {}, apiKey = 'sim-key'): Upstream => falUpstream(sim.url, options, apiKey);
const input = falInput;

/** What the core does with a verdict during a poll (as documented in README.md): client/moderation end the job. */
function failedFrom(v: UpstreamVerdict): VendorStatus | undefined {
  if (v.kind === 'moderation') return { state: 'failed', code: 'content_policy_violation', message: v.message, vendorData: {} };
  if (v.kind === 'client') return { state: 'failed', code: (v.code as FailureCode) ?? 'generation_failed', message: v.message, vendorData: {} };
  return undefined;
}

/** Create, then poll (following `next` requests) until the job settles, the way the core drives an adapter. */
async function run(i: CreateInput, up = upstream()): Promise<{ status: VendorStatus; ref: TaskRef; retries: number }> {
  const created = await ex.send(fal.buildCreate(i, up), 5000);
  expect(created.status, created.text).toBe(200);
  const { taskId, meta } = fal.parseCreate(created, i, up);
  const ref: TaskRef = { taskId, model: i.model, upstreamModel: i.upstreamModel, meta: meta ?? {} };
  let retries = 0;
  for (let round = 0; round < 200; round++) {
    let req = fal.buildPoll(ref, up);
    for (;;) {
      const r = await ex.send(req, 5000);
      if (r.status >= 300) {
        const failed = failedFrom(fal.classifyError(r));
        if (failed) return { status: failed, ref, retries };
        retries++;
        break;
      }
      const out = fal.parsePoll(r, ref, up);
      if ('next' in out) {
        req = out.next;
        continue;
      }
      if (out.state !== 'processing') return { status: out, ref, retries };
      break;
    }
    await sleep(20);
  }
  throw new Error('job never settled');
}

describe('fal round trip over HTTP', () => {
  it('veo3 fast: submit on the model path, poll owner/app only, fetch the result, download the bytes', async () => {
    const { status, ref } = await run(input('fal-ai/veo3/fast', { seconds: 6, aspectRatio: '16:9' }));
    expect(status.state).toBe('completed');
    if (status.state !== 'completed') return;
    expect(status.seconds).toBe(6);
    expect(status.vendorData['sim_trace_id']).toMatch(/^trace-/);
    expect(status.vendorData['seed']).toBe(424242);

    const submit = sim.lastReceived('POST', '/fal-ai/veo3/fast')!;
    expect(submit.headers['authorization']).toBe('Key sim-key');
    expect(submit.json).toEqual({ prompt: 'a red fox in the snow', duration: '6s', aspect_ratio: '16:9' });
    const polls = sim.received('GET', `/fal-ai/veo3/requests/${ref.taskId}/status`);
    expect(polls.length).toBeGreaterThan(0);
    expect(sim.received('GET', `/fal-ai/veo3/requests/${ref.taskId}`)).toHaveLength(1);
    expect(sim.requests.filter((r) => r.path.includes('/fast/requests/'))).toHaveLength(0);

    const dl = await ex.sendRaw(fal.buildContent(ref, status.outputs[0]!, upstream()), 5000);
    expect(dl.status).toBe(200);
    expect(dl.raw.equals(sampleMp4())).toBe(true);
    const cdnHit = sim.requests.find((r) => r.path.startsWith('/files/'))!;
    expect(cdnHit.headers['authorization']).toBeUndefined();
  });

  it('each family receives its own duration spelling, and the simulator accepts it', async () => {
    const cases: [string, number, unknown][] = [
      ['fal-ai/kling-video/v2.1/standard/text-to-video', 10, '10'],
      ['fal-ai/kling-video/o3/pro/text-to-video', 12, '12'],
      ['fal-ai/kling-video/v4/pro/text-to-video', 20, 20],
      ['fal-ai/minimax/hailuo-02/standard/text-to-video', 6, '6'],
    ];
    sim.settings['reportDuration'] = true;
    for (const [model, seconds, sent] of cases) {
      const { status } = await run(input(model, { seconds }));
      expect(status, model).toMatchObject({ state: 'completed', seconds });
      expect(sim.lastReceived('POST', `/${model}`)!.json.duration, model).toEqual(sent);
    }
  });

  it('a native duration wins over seconds and is what gets billed', async () => {
    const { status } = await run(input('fal-ai/veo3/fast', { seconds: 4 }, { duration: 8, generate_audio: false, sim_extra: { a: 1 } }));
    expect(status).toMatchObject({ state: 'completed', seconds: 8 });
    expect(sim.lastReceived('POST', '/fal-ai/veo3/fast')!.json).toEqual({
      prompt: 'a red fox in the snow',
      duration: '8s',
      generate_audio: false,
      sim_extra: { a: 1 },
    });
  });

  it('the simulator rejects a wrong duration spelling, as the model would', async () => {
    const { status } = await run(input('fal-ai/veo3/fast', {}, { duration: 'eight' }));
    expect(status).toMatchObject({ state: 'failed', code: 'unsupported_parameters' });
    expect(status.state === 'failed' && status.message).toContain('literal_error');
  });

  it.each([
    ['[moderation]', 'content_policy_violation'],
    ['[bad-image]', 'invalid_media'],
    ['[bad-combo]', 'unsupported_parameters'],
    ['[fail]', 'generation_failed'],
  ])('a COMPLETED request whose result is an error (%s) is a failed job: %s', async (marker, code) => {
    const i = input('fal-ai/kling-video/v2.1/standard/image-to-video', {
      prompt: `a cat ${marker}`,
      frameImages: [{ url: 'https://img.example/missing.png', frameType: 'first_frame' }],
    });
    const { status, ref } = await run(i);
    expect(status).toMatchObject({ state: 'failed', code });
    const lastStatus = sim.lastReceived('GET', `/fal-ai/kling-video/requests/${ref.taskId}/status`)!;
    expect(lastStatus).toBeDefined();
    expect(sim.received('GET', `/fal-ai/kling-video/requests/${ref.taskId}`)).toHaveLength(1);
  });

  it('a wrong key is fal\'s 401, classified as our credential problem', async () => {
    const up = upstream({}, 'not-the-key');
    const r = await ex.send(fal.buildCreate(input('fal-ai/veo3'), up), 5000);
    expect(r.status).toBe(401);
    expect(r.json).toEqual({ detail: 'No user found for Key ID and Secret' });
    expect(fal.classifyError(r)).toMatchObject({ kind: 'auth', status: 401 });
  });

  it('polls the status URL fal returned (another host), when that host is trusted', async () => {
    const port = new URL(sim.url).port;
    sim.settings['queueOrigin'] = `http://localhost:${port}`;
    const { status, ref } = await run(input('fal-ai/veo3'), upstream({ trusted_hosts: ['localhost'] }));
    expect(status.state).toBe('completed');
    expect(ref.meta['status_url']).toBe(`http://localhost:${port}/fal-ai/veo3/requests/${ref.taskId}/status`);
    const followUps = sim.requests.filter((r) => r.method === 'GET' && r.path.includes('/requests/'));
    expect(followUps.length).toBeGreaterThan(1);
    for (const r of followUps) expect(r.headers['host']).toBe(`localhost:${port}`);
  });

  it('an untrusted status host never gets the key: polling falls back to the configured origin', async () => {
    const port = new URL(sim.url).port;
    sim.settings['queueOrigin'] = `http://localhost:${port}`;
    const { status } = await run(input('fal-ai/veo3'));
    expect(status.state).toBe('completed');
    const followUps = sim.requests.filter((r) => r.method === 'GET' && r.path.includes('/requests/'));
    for (const r of followUps) expect(r.headers['host']).toBe(new URL(sim.url).host);
  });

  it('a transient 503 on a status poll is retried, not a failure', async () => {
    sim.inject({ kind: 'status', status: 503 }, 2, /\/status$/);
    const { status, retries } = await run(input('fal-ai/veo3/fast', { seconds: 4 }));
    expect(status).toMatchObject({ state: 'completed', seconds: 4 });
    expect(retries).toBe(2);
  });

  it('webhook_url reaches fal as the fal_webhook query parameter', async () => {
    await run(input('fal-ai/veo3', {}, { webhook_url: 'https://hooks.example/done' }));
    const submit = sim.lastReceived('POST', '/fal-ai/veo3')!;
    expect(submit.query.get('fal_webhook')).toBe('https://hooks.example/done');
    expect(submit.json).not.toHaveProperty('webhook_url');
  });
});

describe('fal simulator CDN', () => {
  it('serves byte ranges (206) and refuses unsatisfiable ones (416)', async () => {
    const { status, ref } = await run(input('fal-ai/veo3'));
    if (status.state !== 'completed') throw new Error('expected a completed job');
    const req = fal.buildContent(ref, status.outputs[0]!, upstream());
    const part = await ex.sendRaw({ ...req, headers: { ...req.headers, range: 'bytes=10-109' } }, 5000);
    expect(part.status).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 10-109/${sampleMp4().length}`);
    expect(part.raw.equals(sampleMp4().subarray(10, 110))).toBe(true);
    const tail = await ex.sendRaw({ ...req, headers: { range: 'bytes=-16' } }, 5000);
    expect(tail.raw.equals(sampleMp4().subarray(sampleMp4().length - 16))).toBe(true);
    const bad = await ex.sendRaw({ ...req, headers: { range: `bytes=${sampleMp4().length}-` } }, 5000);
    expect(bad.status).toBe(416);
    expect(bad.headers['content-range']).toBe(`bytes */${sampleMp4().length}`);
  });

  it('streams a large synthetic body when videoBytes is set', async () => {
    sim.settings['videoBytes'] = 5 * 1024 * 1024 + 3;
    const { status, ref } = await run(input('fal-ai/veo3'));
    if (status.state !== 'completed') throw new Error('expected a completed job');
    expect(status.vendorData['video']).toMatchObject({ file_size: 5 * 1024 * 1024 + 3 });
    const s = await ex.stream(fal.buildContent(ref, status.outputs[0]!, upstream()), 5000);
    let total = 0;
    let head: Buffer | undefined;
    for await (const chunk of s.body) {
      head ??= Buffer.from(chunk as Buffer).subarray(0, 8);
      total += (chunk as Buffer).length;
    }
    expect(total).toBe(5 * 1024 * 1024 + 3);
    expect(head!.equals(sampleMp4().subarray(0, 8))).toBe(true);
  });

  it('a failed request has no file on the CDN, and the result of a running request is not ready', async () => {
    const up = upstream();
    const i = input('fal-ai/veo3', { prompt: 'x [fail]' });
    const created = await ex.send(fal.buildCreate(i, up), 5000);
    const { taskId, meta } = fal.parseCreate(created, i, up);
    const early = await ex.send({ method: 'GET', url: String(meta!['response_url']), headers: { authorization: 'Key sim-key' } }, 5000);
    expect(early.status).toBe(400);
    expect((await ex.send({ method: 'GET', url: `${sim.url}/files/sim/${taskId}/output.mp4`, headers: {} }, 5000)).status).toBe(404);
  });
});
