import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4 } from '../../src/sim/media.js';
import { videoModule as fal } from '../../src/video/vendors/fal/index.js';
import { videoModule as veo } from '../../src/video/vendors/veo/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { longestLoopHold } from '../helpers/loop-gap.js';
import { createVideo, download, upstreamsFor } from '../helpers/video.js';

/**
 * A video returned inline (Veo's base64 `bytesBase64Encoded`, fal's `data:` URL) of tens of MB is
 * read, lifted out of the answer, checked, decoded and stored without holding the event loop: every
 * other request waits meanwhile. A 45 MB Veo video held it ~160-320 ms on a loaded 2-core machine
 * (the answer joined, its base64 copied out as a string, matched with a pattern and decoded, each in
 * one go); it is now a bounded piece per turn, longest holds ~10-45 ms on the same machine
 * (bench/inline-stall.ts). What a busy machine adds (a turn that waited for a core, a collection) is
 * not the settle's own doing, so each case settles up to three jobs and the best of them is held to
 * MAX_HOLD_MS; a hold of the settle's own shows in every one. What is stored is the video, byte for
 * byte, and a large text that is not strict base64 still fails the job, nothing charged or kept.
 */
const MAX_HOLD_MS = 100;
const BALANCE = 10_000_000;
const HOLD = 400_000; // 4 s at 0.1 a second

const VEO_MODEL = 'veo-3.1-generate-001';
const VEO_POLL = /:fetchPredictOperation$/;
const FAL_MODEL = 'fal-ai/veo3/fast';
const FAL_RESULT = /\/requests\/[^/]+$/;

let veoSim: SimServer;
let falSim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  veoSim = await veo.simulator.start({ taskMs: 50 });
  falSim = await fal.simulator.start({ taskMs: 50 });
  gw = await startTestGateway(upstreamsFor([{ module: veo, sim: veoSim }, { module: fal, sim: falSim }]));
}, 30_000);
afterEach(() => {
  veoSim.clearFaults();
  falSim.clearFaults();
});
afterAll(async () => {
  await gw?.close();
  await veoSim?.close();
  await falSim?.close();
});

/** A playable MP4 head followed by `mb` MB of random bytes. */
const videoOf = (mb: number): Buffer => Buffer.concat([sampleMp4(), randomBytes(mb * 1024 * 1024 - sampleMp4().length)]);

const veoAnswer = (base64: string): Buffer =>
  Buffer.from(JSON.stringify({ name: 'projects/p/locations/l/operations/op', done: true, response: { raiMediaFilteredCount: 0, videos: [{ bytesBase64Encoded: base64, mimeType: 'video/mp4' }] } }));

interface Settled {
  job: any;
  jobId: string;
  key: string;
  account: string;
  holdMs: number;
}

/** A job on `sim` whose poll answers `body` (rendered before the clock starts), settled by one GET, the loop's longest hold measured meanwhile. */
async function settleWith(sim: SimServer, model: string, poll: RegExp, body: Buffer, method?: string): Promise<Settled> {
  const { key, account } = await gw.newKey(10);
  const { created, jobId } = await createVideo(gw, key, { model, prompt: 'a fox', seconds: 4 });
  // fal answers its status first; the result is asked for once the simulator's task is done.
  await new Promise((r) => setTimeout(r, 100));
  sim.inject({ kind: 'status', status: 200, body }, 100, poll, method);
  await gw.services.store.recordPoll(jobId, { vendorData: {}, progress: null, nextPollAt: 0, now: Date.now() });
  gw.services.video.jobs.forget(jobId);
  let job: any;
  const { maxMs } = await longestLoopHold(async () => {
    for (let i = 0; i < 20 && (!job || job.status === 'processing' || job.status === 'queued'); i++) {
      job = (await call(gw, 'GET', `/v1/videos/${created.json.id}`, { key })).json;
    }
  });
  sim.clearFaults();
  return { job, jobId, key, account, holdMs: maxMs };
}

/** Settles up to three jobs with `body`; the first whose settle held the loop less than MAX_HOLD_MS is returned. */
async function bestOfThree(settle: () => Promise<Settled>): Promise<Settled> {
  const holds: number[] = [];
  for (;;) {
    const s = await settle();
    holds.push(s.holdMs);
    console.log(`longest event-loop hold while settling: ${s.holdMs.toFixed(1)} ms`);
    if (s.holdMs < MAX_HOLD_MS || holds.length === 3) return s;
  }
}

async function expectStored(s: Settled, video: Buffer): Promise<void> {
  expect(s.job.status, JSON.stringify(s.job).slice(0, 300)).toBe('completed');
  expect(await gw.balance(s.account)).toBe(BALANCE - HOLD);
  const got = await download(`${gw.url}/v1/videos/${s.job.id}/content`, { authorization: `Bearer ${s.key}` });
  expect(got.status).toBe(200);
  expect(got.bytes.length).toBe(video.length);
  expect(got.bytes.equals(video)).toBe(true);
}

describe('a video of tens of MB returned inline', () => {
  it('Veo, 45 MB of base64: stored byte for byte, the event loop never held for long', async () => {
    const video = videoOf(45);
    const body = veoAnswer(video.toString('base64'));
    const s = await bestOfThree(() => settleWith(veoSim, VEO_MODEL, VEO_POLL, body));
    expect(s.holdMs).toBeLessThan(MAX_HOLD_MS);
    await expectStored(s, video);
    expect(JSON.stringify(s.job.vendor_data)).not.toContain(body.toString('latin1', 200, 264));
  }, 60_000);

  it('fal, a data: URL of 20 MB of URL-safe base64: stored byte for byte, the event loop never held for long', async () => {
    const video = videoOf(20);
    const url = `data:video/mp4;base64,${video.toString('base64url')}`;
    const body = Buffer.from(JSON.stringify({ video: { url, content_type: 'video/mp4' }, seed: 7 }));
    const s = await bestOfThree(() => settleWith(falSim, FAL_MODEL, FAL_RESULT, body, 'GET'));
    expect(s.holdMs).toBeLessThan(MAX_HOLD_MS);
    await expectStored(s, video);
    expect(s.job.vendor_data.seed).toBe(7);
  }, 60_000);

  it('45 MB that is not strict base64 fails the job, nothing charged or kept', async () => {
    const text = videoOf(45).toString('base64');
    const middle = Math.floor(text.length / 2);
    for (const bad of [
      // A padding character inside, which Node's decoder stops at.
      `${text.slice(0, middle)}=${text.slice(middle + 1)}`,
      // Both alphabets: a URL-safe character amid 45 MB of the standard one.
      `${text.slice(0, middle)}-${text.slice(middle + 1)}`,
    ]) {
      expect(bad.length).toBe(text.length);
      const s = await settleWith(veoSim, VEO_MODEL, VEO_POLL, veoAnswer(bad));
      expect(s.job.status, JSON.stringify(s.job).slice(0, 300)).toBe('failed');
      expect(s.job.error.code).toBe('generation_failed');
      expect(await gw.balance(s.account)).toBe(BALANCE);
      expect(await gw.services.video.deps.blobs.size(`${s.jobId}-0.mp4`)).toBeUndefined();
    }
  }, 60_000);
});
