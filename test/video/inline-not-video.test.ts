import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4 } from '../../src/sim/media.js';
import { videoModule as fal } from '../../src/video/vendors/fal/index.js';
import { videoModule as veo } from '../../src/video/vendors/veo/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createVideo, pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * A video a vendor returns inside its answer (Veo's `bytesBase64Encoded`, fal's `data:` URL) is
 * checked when the job's result is taken: text that is not strict base64, nothing at all, bytes that
 * are not a video (an HTML page quoting the credentials the gateway sent), or a declared document
 * type fail the job as `generation_failed`. The hold comes back whole, nothing is captured, nothing
 * is kept in the blob store, and the operator's warning quotes none of it. A real MP4 still
 * completes, is billed and is served, its stored copy marked as checked (so downloads need not check
 * it again: test/video/content-not-media-stored.test.ts).
 */
const HOLD = 400_000; // 4 s at 0.1 a second
const BALANCE = 10_000_000;

let veoSim: SimServer;
let falSim: SimServer;
let gw: TestGateway;
const lines: string[] = [];

beforeAll(async () => {
  veoSim = await veo.simulator.start({ taskMs: 30 });
  falSim = await fal.simulator.start({ taskMs: 30, apiKey: 'fal-key-id:fal-key-secret-0123456789' });
  const upstreams = upstreamsFor([
    { module: veo, sim: veoSim },
    { module: fal, sim: falSim },
  ]);
  gw = await startTestGateway({ ...upstreams, log_level: 'info' }, { logSink: { write: (line: string) => lines.push(line) } });
});
afterAll(async () => {
  await gw?.close();
  await veoSim?.close();
  await falSim?.close();
});

const b64 = (b: Buffer | string): string => Buffer.from(b).toString('base64');
const page = (secret: string): string => `<!doctype html><html><body><pre>Authorization: ${secret}</pre></body></html>`;

interface Settled {
  job: any;
  account: string;
  key: string;
  jobId: string;
  /** The credential the gateway sent the vendor (an access token, an API key). */
  credential: string;
}

/**
 * A job on `sim` (created by a POST to `create`) whose every answer on `poll` is what `answer` makes
 * of the Authorization header the gateway sent, polled until it ends.
 */
async function settleOn(sim: SimServer, create: RegExp, poll: RegExp, model: string, answer: (authorization: string) => unknown): Promise<Settled> {
  const { key, account } = await gw.newKey(10);
  const { created, jobId } = await createVideo(gw, key, { model, prompt: 'a fox', seconds: 4 });
  const authorization = sim.lastReceived('POST', create)!.headers['authorization']!;
  const credential = authorization.replace(/^\S+\s+/, '');
  expect(credential.length).toBeGreaterThan(8);
  // Every poll: a job that cannot settle on this answer would otherwise settle on the simulator's own.
  sim.inject({ kind: 'status', status: 200, json: answer(authorization) as any }, 1_000, poll);
  lines.length = 0;
  const job = await pollUntilDone(gw, key, created.json.id, 10_000).finally(() => sim.clearFaults());
  return { job, account, key, jobId, credential };
}

const VEO_MODEL = 'veo-3.1-generate-001';
const VEO_POLL = /:fetchPredictOperation$/;
const operation = (videos: unknown[]) => ({ name: 'projects/p/locations/us-central1/publishers/google/models/m/operations/op-1', done: true, response: { videos } });
const veoJob = (videos: (authorization: string) => unknown[]) => settleOn(veoSim, /:predictLongRunning$/, VEO_POLL, VEO_MODEL, (a) => operation(videos(a)));

const FAL_MODEL = 'fal-ai/veo3/fast';
const FAL_RESULT = /\/requests\/[^/]+$/;
const falJob = (url: (authorization: string) => string) =>
  settleOn(falSim, new RegExp(`^/${FAL_MODEL}$`), FAL_RESULT, FAL_MODEL, (a) => ({ video: { url: url(a), content_type: 'video/mp4' }, seed: 7 }));

/** The job failed as the vendor's failure, nothing was charged or kept, and the credential shows nowhere. */
async function expectRefused(s: Settled, reason: string, output = 0): Promise<void> {
  expect(s.job.status, JSON.stringify(s.job).slice(0, 400)).toBe('failed');
  expect(s.job.error.code).toBe('generation_failed');
  expect(s.job.usage.cost).toBe(0);
  expect(await gw.balance(s.account)).toBe(BALANCE);
  const record = (await gw.services.store.getJob(s.jobId))!;
  expect(record.outputs).toEqual([]);
  expect(await gw.services.video.deps.blobs.size(`${s.jobId}-0.mp4`)).toBeUndefined();
  const content = await call(gw, 'GET', `/v1/videos/${s.job.id}/content`, { key: s.key });
  expect(content.status).toBe(400);
  expect(content.json.error.code).toBe('video_not_ready');
  const warnings = lines.filter((l) => l.includes('an inline video is not a video'));
  expect(warnings).toHaveLength(1);
  expect(JSON.parse(warnings[0]!)).toMatchObject({ job: s.jobId, output, reason });
  expect(JSON.stringify(s.job)).not.toContain(s.credential);
  for (const l of lines) expect(l).not.toContain(s.credential);
}

/** The job completed, was billed the hold, and serves `video` (the MP4 fixture) from the blob store, its copy marked as checked. */
async function expectServed(s: Settled, video = sampleMp4()): Promise<void> {
  expect(s.job.status, JSON.stringify(s.job).slice(0, 400)).toBe('completed');
  expect(await gw.balance(s.account)).toBe(BALANCE - HOLD);
  expect(await gw.services.video.deps.blobs.size(`${s.jobId}-0.mp4`)).toBe(video.length);
  const record = (await gw.services.store.getJob(s.jobId))!;
  expect(record.outputs).toEqual([{ blob: `${s.jobId}-0.mp4`, size: video.length, mimeType: 'video/mp4', checkedWhenStored: true }]);
  const res = await fetch(`${gw.url}/v1/videos/${s.job.id}/content`, { headers: { authorization: `Bearer ${s.key}` } });
  expect(res.status).toBe(200);
  expect(Buffer.from(await res.arrayBuffer()).equals(video)).toBe(true);
}

describe('an inline video from Veo (bytesBase64Encoded)', () => {
  it('that is not base64 fails the job, nothing charged, no blob kept', async () => {
    await expectRefused(await veoJob(() => [{ bytesBase64Encoded: '!!!!****', mimeType: 'video/mp4' }]), 'not valid base64');
    // Base64 with a character outside its alphabet in the middle, which Node's decoder would skip.
    const mp4 = b64(sampleMp4());
    await expectRefused(await veoJob(() => [{ bytesBase64Encoded: `${mp4.slice(0, 40)}*${mp4.slice(40)}`, mimeType: 'video/mp4' }]), 'not valid base64');
  });

  it('that is an HTML page quoting the access token fails the job, whatever type it declares', async () => {
    for (const mimeType of ['text/html', 'video/mp4', undefined]) {
      const s = await veoJob((a) => [{ bytesBase64Encoded: b64(page(a)), ...(mimeType ? { mimeType } : {}) }]);
      expect(s.credential).toMatch(/^ya29\./);
      await expectRefused(s, mimeType === 'text/html' ? 'declared a document type' : 'first bytes are not a video container');
    }
  });

  it('that is an HTML page behind an 8-byte mdat or moov box header (after a filler or not) fails the job', async () => {
    const header = (size: number, type: string) => Buffer.concat([Buffer.from([size >>> 24, (size >>> 16) & 255, (size >>> 8) & 255, size & 255]), Buffer.from(type)]);
    for (const type of ['mdat', 'moov']) {
      for (const lead of [Buffer.alloc(0), header(8, 'wide')]) {
        const s = await veoJob((a) => [{ bytesBase64Encoded: b64(Buffer.concat([lead, header(8 + page(a).length, type), Buffer.from(page(a))])), mimeType: 'video/mp4' }]);
        await expectRefused(s, 'first bytes are not a video container');
      }
    }
  });

  it('a QuickTime movie that opens with its movie box (no ftyp) completes and is served', async () => {
    const movieFirst = sampleMp4().subarray(sampleMp4().readUInt32BE(0));
    expect(movieFirst.toString('latin1', 4, 8)).toBe('moov');
    await expectServed(await veoJob(() => [{ bytesBase64Encoded: b64(movieFirst), mimeType: 'video/mp4' }]), movieFirst);
  });

  it('that is a real MP4 declared as text/html fails the job: a document type is refused as for a download', async () => {
    await expectRefused(await veoJob(() => [{ bytesBase64Encoded: b64(sampleMp4()), mimeType: 'text/html' }]), 'declared a document type');
  });

  it('one broken video among good ones fails the whole job', async () => {
    const videos = [
      { bytesBase64Encoded: b64(sampleMp4()), mimeType: 'video/mp4' },
      { bytesBase64Encoded: b64(page('nothing')), mimeType: 'video/mp4' },
    ];
    await expectRefused(await veoJob(() => videos), 'first bytes are not a video container', 1);
  });

  it('a real MP4 completes, is billed and is served (padded, unpadded and URL-safe base64 alike)', async () => {
    const mp4 = b64(sampleMp4());
    const texts = [mp4, mp4.replace(/=+$/, ''), mp4.replace(/\+/g, '-').replace(/\//g, '_')];
    expect(new Set(texts).size).toBe(3);
    for (const text of texts) {
      await expectServed(await veoJob(() => [{ bytesBase64Encoded: text, mimeType: 'video/mp4' }]));
    }
  });
});

describe('an inline video from fal (a data: URL)', () => {
  it('that is not base64 fails the job, nothing charged, no blob kept', async () => {
    await expectRefused(await falJob(() => 'data:video/mp4;base64,!!!!'), 'not valid base64');
  });

  it('that is empty fails the job', async () => {
    await expectRefused(await falJob(() => 'data:video/mp4;base64,'), 'empty');
  });

  it('that is an HTML page quoting the fal key fails the job', async () => {
    const html = await falJob((a) => `data:text/html;base64,${b64(page(a))}`);
    expect(html.credential).toBe(fal.simulator.demo(falSim).apiKey);
    await expectRefused(html, 'declared a document type');
    await expectRefused(await falJob((a) => `data:video/mp4;base64,${b64(page(a))}`), 'first bytes are not a video container');
  });

  it('a real MP4 completes, is billed and is served', async () => {
    await expectServed(await falJob(() => `data:video/mp4;base64,${b64(sampleMp4())}`));
  });
});
