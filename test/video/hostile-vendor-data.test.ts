import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4 } from '../../src/sim/media.js';
import { VENDOR_DATA_MAX_BYTES, VENDOR_DATA_TRUNCATED, boundVendorData } from '../../src/video/vendors/answers.js';
import { videoModule as azureSora } from '../../src/video/vendors/azure-sora/index.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { videoModule as veo } from '../../src/video/vendors/veo/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createVideo, pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * A vendor whose poll answers are far larger than any job object, over real HTTP. What the gateway
 * stores as vendor_data, and sends back on every GET, stays within 64 KiB; an answer over the poll
 * cap (1 MiB for vendors that never inline video) is not read at all; Veo, which does put the video
 * bytes in its poll answer, still works with a video larger than that cap.
 */
let soraSim: SimServer;
let azureSim: SimServer;
let veoSim: SimServer;
let gw: TestGateway;

const SORA_POLL = /^\/v1\/videos\/[^/]+$/;
const AZURE_POLL = /\/video\/generations\/jobs\/[^/]+$/;
const VEO_POLL = /:fetchPredictOperation$/;
const KEEP_MAX = VENDOR_DATA_MAX_BYTES;

beforeAll(async () => {
  soraSim = await sora.simulator.start({ taskMs: 50 });
  azureSim = await azureSora.simulator.start({ taskMs: 50 });
  veoSim = await veo.simulator.start({ taskMs: 50 });
  gw = await startTestGateway(
    upstreamsFor([
      { module: sora, sim: soraSim },
      { module: azureSora, sim: azureSim },
      { module: veo, sim: veoSim },
    ]),
  );
});
afterEach(() => {
  for (const s of [soraSim, azureSim, veoSim]) s.clearFaults();
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([soraSim, azureSim, veoSim].map((s) => s?.close()));
});

/** Every poll answers `answer` until the faults are cleared; with its Content-Length when `declared`. */
function everyPollAnswers(sim: SimServer, match: RegExp, answer: Record<string, unknown>, declared = false): void {
  const headers: Record<string, string> = declared ? { 'content-length': String(Buffer.byteLength(JSON.stringify(answer))) } : {};
  sim.inject({ kind: 'status', status: 200, json: answer, headers }, 10_000, match);
}

function soraAnswer(status: string, extra: Record<string, unknown>): Record<string, unknown> {
  return { id: 'video_hostile', object: 'video', model: 'sora-2', status, progress: status === 'completed' ? 100 : 40, seconds: '4', size: '720x1280', ...extra };
}

async function createSora(key: string): Promise<{ id: string; jobId: string }> {
  const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'a fox', seconds: 4 } });
  expect(r.status, r.text).toBe(200);
  return { id: r.json.id, jobId: gw.services.video.deps.sealer.open(r.json.id)!.j };
}

async function storedBytes(jobId: string): Promise<number> {
  return Buffer.byteLength(JSON.stringify((await gw.services.store.getJob(jobId))!.vendorData));
}

describe('a huge poll answer under the poll cap', () => {
  it('is stored and returned cut to whole fields, marked, with the small fields kept', async () => {
    const { key } = await gw.newKey(10);
    const { id, jobId } = await createSora(key);
    everyPollAnswers(soraSim, SORA_POLL, soraAnswer('in_progress', { blob: 'x'.repeat(600_000), also_big: ['y'.repeat(100_000)], note: 'small' }));
    const r = await call(gw, 'GET', `/v1/videos/${id}`, { key });
    expect(r.status).toBe(200);
    expect(r.json.status).toBe('processing');
    expect(r.text.length).toBeLessThan(KEEP_MAX + 2_000);
    expect(r.json.vendor_data).toMatchObject({ note: 'small', status: 'in_progress', size: '720x1280' });
    expect(r.json.vendor_data.blob).toBeUndefined();
    expect(r.json.vendor_data[VENDOR_DATA_TRUNCATED]).toEqual({ omitted_fields: ['blob', 'also_big'], omitted_count: 2, max_bytes: KEEP_MAX });
    expect(await storedBytes(jobId)).toBeLessThanOrEqual(KEEP_MAX);
    // The list answers the same bounded object.
    const list = await call(gw, 'GET', '/v1/videos', { key });
    expect(list.status).toBe(200);
    expect(list.text.length).toBeLessThan(KEEP_MAX + 4_000);
  });

  it('keeps as many of many small fields as fit, and still settles and bills the job', async () => {
    const { key, account } = await gw.newKey(0.4);
    const { id, jobId } = await createSora(key);
    const many: Record<string, unknown> = {};
    for (let i = 0; i < 30_000; i++) many[`field_${i}`] = `value_${i}`;
    everyPollAnswers(soraSim, SORA_POLL, soraAnswer('completed', many));
    const done = await pollUntilDone(gw, key, id, 5_000);
    expect(done.status).toBe('completed');
    expect(done.usage.cost).toBe(0.4);
    expect(await gw.balance(account)).toBe(0);
    const marker = done.vendor_data[VENDOR_DATA_TRUNCATED];
    expect(marker.omitted_count).toBeGreaterThan(20_000);
    expect(Object.keys(done.vendor_data).length).toBeGreaterThan(1_000);
    expect(done.vendor_data.status).toBe('completed');
    expect(await storedBytes(jobId)).toBeLessThanOrEqual(KEEP_MAX);
  });

  it('is bounded for every vendor by the same rule (Azure, on a completed job)', async () => {
    const { key, account } = await gw.newKey(0.5);
    const { created, jobId } = await createVideo(gw, key, { model: 'sora', prompt: 'a fox', n_seconds: 5 });
    everyPollAnswers(azureSim, AZURE_POLL, {
      object: 'video.generation.job',
      id: 'task_hostile',
      status: 'succeeded',
      n_seconds: 5,
      generations: [{ object: 'video.generation', id: 'gen_a', n_seconds: 5 }],
      diagnostics: 'z'.repeat(700_000),
    });
    const done = await pollUntilDone(gw, key, created.json.id, 5_000);
    expect(done.status).toBe('completed');
    expect(done.usage.cost).toBe(0.5);
    expect(await gw.balance(account)).toBe(0);
    expect(done.vendor_data.generations).toHaveLength(1);
    expect(done.vendor_data[VENDOR_DATA_TRUNCATED].omitted_fields).toEqual(['diagnostics']);
    expect(await storedBytes(jobId)).toBeLessThanOrEqual(KEEP_MAX);
  });
});

describe('a poll answer over the poll cap', () => {
  it.each([
    ['chunked', false],
    ['with a declared Content-Length', true],
  ])('(%s) is not read: nothing of it is stored, the job stays processing, then settles normally', async (_label, declared) => {
    const { key, account } = await gw.newKey(0.4);
    const { id, jobId } = await createSora(key);
    everyPollAnswers(soraSim, SORA_POLL, soraAnswer('completed', { seconds: '100000', blob: 'x'.repeat(5 * 1024 * 1024) }), declared);
    const polledBefore = soraSim.received('GET', SORA_POLL).length;
    for (let i = 0; i < 3; i++) {
      const r = await call(gw, 'GET', `/v1/videos/${id}`, { key });
      expect(r.status).toBe(200);
      expect(r.json.status).toBe('processing');
      expect(r.text.length).toBeLessThan(4_000);
      // Due again at once: a refused answer is retried later, like a transport failure.
      await gw.services.store.recordPoll(jobId, { vendorData: {}, progress: null, nextPollAt: 0, now: Date.now() });
      gw.services.video.jobs.forget(jobId);
    }
    expect(soraSim.received('GET', SORA_POLL).length - polledBefore).toBe(3);
    expect(await storedBytes(jobId)).toBeLessThan(100);
    expect(await gw.balance(account)).toBe(0);

    soraSim.clearFaults();
    await new Promise((r) => setTimeout(r, 100));
    const done = await pollUntilDone(gw, key, id, 5_000);
    expect(done.status).toBe('completed');
    expect(done.usage.cost).toBe(0.4);
    expect(await gw.balance(account)).toBe(0);
  });
});

describe('a create answer whose task id no poll could carry', () => {
  it('an id of 20,000 characters is an unreadable answer: no job, nothing held or charged, and no poll sent with it', async () => {
    const { key, account } = await gw.newKey(0.4);
    soraSim.inject({ kind: 'status', status: 200, json: soraAnswer('queued', { id: `video_${'v'.repeat(20_000)}` }) }, 1, /^\/v1\/videos$/);
    const polledBefore = soraSim.received('GET', SORA_POLL).length;
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'a fox', seconds: 4 } });
    expect(r.status, r.text).toBe(502);
    expect(r.json.error).toMatchObject({ type: 'server_error', code: 'upstream_error' });
    expect(r.text).not.toContain('vvvvvvvvvv');
    await new Promise((res) => setTimeout(res, 200));
    expect(soraSim.received('GET', SORA_POLL).length).toBe(polledBefore);
    expect(await gw.balance(account)).toBe(400_000);
  });
});

describe('a vendor that returns the video inside its poll answer', () => {
  it('still completes with a video larger than the poll cap (Veo, base64 bytes)', async () => {
    const { key } = await gw.newKey(10);
    const model = veo.simulator.demo(veoSim).models[0]!.name;
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'a fox', seconds: 4 } });
    expect(created.status, created.text).toBe(200);
    const video = Buffer.concat([sampleMp4(), randomBytes(2 * 1024 * 1024)]);
    everyPollAnswers(veoSim, VEO_POLL, {
      name: 'projects/p/locations/us-central1/publishers/google/models/m/operations/op-1',
      done: true,
      response: { '@type': 'type.googleapis.com/cloud.ai.large_models.vision.GenerateVideoResponse', videos: [{ bytesBase64Encoded: video.toString('base64'), mimeType: 'video/mp4' }] },
    });
    const done = await pollUntilDone(gw, key, created.json.id, 5_000);
    expect(done.status, JSON.stringify(done).slice(0, 500)).toBe('completed');
    expect(JSON.stringify(done.vendor_data)).not.toContain(video.toString('base64').slice(0, 64));
    // The bytes were kept whole in the gateway's blob store (read there rather than over the content
    // endpoint, which these tests do not exercise).
    const job = (await gw.services.store.getJob(gw.services.video.deps.sealer.open(created.json.id)!.j))!;
    const blob = job.outputs[0]!.blob as string;
    expect(job.outputs[0]!.size).toBe(video.length);
    const stream = (await gw.services.video.deps.blobs.open(blob))!;
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).equals(video)).toBe(true);
  });
});

describe('boundVendorData', () => {
  it('leaves what fits alone and never goes over the bound', () => {
    const small = { a: 1, b: 'two', c: [true, null, { d: 'e' }] };
    expect(boundVendorData(small)).toBe(small);
    const cut = boundVendorData({ a: 'x'.repeat(KEEP_MAX), b: 1 });
    expect(cut).toEqual({ b: 1, [VENDOR_DATA_TRUNCATED]: { omitted_fields: ['a'], omitted_count: 1, max_bytes: KEEP_MAX } });
    // Multi-byte text, names too long to list, nesting deeper than any vendor object.
    let deep: unknown = 'bottom';
    for (let i = 0; i < 200; i++) deep = [deep];
    const hostile: Record<string, unknown> = { deep, ['k'.repeat(500)]: 'v'.repeat(70_000), text: 'é'.repeat(40_000), ok: 'yes' };
    const out = boundVendorData(hostile as never);
    expect(Buffer.byteLength(JSON.stringify(out))).toBeLessThanOrEqual(KEEP_MAX);
    expect(out.ok).toBe('yes');
    expect(out.deep).toBeUndefined();
    expect(out[VENDOR_DATA_TRUNCATED]).toMatchObject({ omitted_count: 3 });
  });
});
