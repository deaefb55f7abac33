import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModules } from '../../src/video/vendors/registry.js';
import { upstreamsFor } from '../helpers/video.js';
import { httpCall, eventually } from './client.js';
import { startChildGateway, type ChildGateway } from './child.js';

/**
 * Issue 9, reproductions 1 and 2, against the real process: an unsatisfiable Range on a finished
 * video, and a video the vendor no longer has, used to end the process with an unhandled 'error'
 * from the upstream body the gateway destroyed. Every vendor that serves its videos itself.
 */
let sims: SimServer[] = [];
let gw: ChildGateway;
let key: string;
let account: string;
const jobs: { vendor: string; id: string; outputUrl: string }[] = [];

async function expectAlive(what: string): Promise<void> {
  expect(await gw.healthy(), `${what}: the gateway died or /health stopped answering\n${gw.output()}`).toBe(true);
}

beforeAll(async () => {
  sims = await Promise.all(videoModules.map((m) => m.simulator.start({ taskMs: 30 })));
  const { upstreams, models } = upstreamsFor(videoModules.map((m, i) => ({ module: m, sim: sims[i]! })));
  // A restarted Veo simulator mints a new service account; a static token (which it also accepts)
  // keeps authenticating across the restart below, as Google's credentials do across Vertex's.
  for (const u of upstreams) {
    if (u.vendor !== 'veo') continue;
    delete u.service_account;
    u.access_token = sims[videoModules.findIndex((m) => m.vendor.id === 'veo')]!.settings.apiKey;
  }
  gw = await startChildGateway({ upstreams, models, video: { poll_interval_ms: 0, refresher_interval_ms: 0 } });
  ({ key, account } = await gw.newKey(100));
  const listed = await httpCall(`${gw.url}/v1/models`, { key });
  for (const m of videoModules) {
    const model = (listed.json.data as { id: string; owned_by: string }[]).find((x) => x.owned_by === m.vendor.id)!;
    const created = await httpCall(`${gw.url}/v1/videos/generations`, { key, body: { model: model.id, prompt: 'a lighthouse at dusk' } });
    expect(created.status, `${m.vendor.id}: ${created.body}`).toBe(200);
    let job: any;
    await eventually(async () => {
      job = (await httpCall(`${gw.url}/v1/videos/${created.json.id}`, { key })).json;
      return job.status !== 'processing';
    }, 15_000);
    expect(job.status, `${m.vendor.id}: ${JSON.stringify(job.error)}`).toBe('completed');
    jobs.push({ vendor: m.vendor.id, id: job.id, outputUrl: job.output_url });
  }
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await Promise.all(sims.map((s) => s.close()));
});

describe('a finished video cannot take the process down', () => {
  it('Range past the end: 416 in the error shape, with and without a key, and the process lives (every vendor)', async () => {
    const balance = await gw.balance(account);
    for (const job of jobs) {
      const withKey = await httpCall(`${gw.url}/v1/videos/${job.id}/content`, { key, headers: { range: 'bytes=99999999-' } });
      expect(withKey.status, `${job.vendor}: ${withKey.body}`).toBe(416);
      expect(withKey.json.error).toMatchObject({ type: 'invalid_request_error', code: 'range_not_satisfiable' });
      expect(withKey.headers['content-range'], job.vendor).toMatch(/^bytes \*\/\d+$/);
      // The signed output_url needs no key: anyone holding a link could stop the service.
      const signed = await httpCall(job.outputUrl, { headers: { range: 'bytes=99999999-' } });
      expect(signed.status, job.vendor).toBe(416);
      // The crash came a moment after the answer, when the destroyed body emitted its error.
      await new Promise((r) => setTimeout(r, 100));
      await expectAlive(job.vendor);
    }
    // The whole video still downloads afterwards, and nothing was charged for the refusals.
    for (const job of jobs) expect((await httpCall(job.outputUrl)).status, job.vendor).toBe(200);
    expect(await gw.balance(account)).toBe(balance);
  });

  it('a video the vendor no longer has: 404 video_expired, with and without a key, and the process lives (every vendor)', async () => {
    // Vendors expire their outputs; here every simulator restarts on its port and has forgotten them.
    sims = await Promise.all(
      sims.map(async (s, i) => {
        const port = Number(new URL(s.url).port);
        await s.close();
        const next = await videoModules[i]!.simulator.start({ taskMs: 30, port });
        return next;
      }),
    );
    const balance = await gw.balance(account);
    for (const job of jobs) {
      const withKey = await httpCall(`${gw.url}/v1/videos/${job.id}/content`, { key });
      expect(withKey.status, `${job.vendor}: ${withKey.json ? withKey.body : ""}`).toBe(404);
      expect(withKey.json.error).toMatchObject({ type: 'not_found', code: 'video_expired' });
      const signed = await httpCall(job.outputUrl);
      expect(signed.status, job.vendor).toBe(404);
      expect(signed.json.error.code).toBe('video_expired');
      await new Promise((r) => setTimeout(r, 100));
      await expectAlive(job.vendor);
    }
    expect(await gw.balance(account)).toBe(balance);
  });
});
