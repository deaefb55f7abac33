import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4 } from '../../src/sim/media.js';
import type { SqlStore } from '../../src/store/index.js';
import { videoModule as veo } from '../../src/video/vendors/veo/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * A vendor that returns the video inline (Veo's `bytesBase64Encoded`) has it kept in the gateway's
 * blob store, and served from there. Inline results are checked when the job settles (an HTML page
 * fails the job: test/video/inline-not-video.test.ts), and the stored output is marked as checked.
 * A copy stored before that check (no mark) may hold whatever the vendor sent: bytes that are not a
 * video (an HTML page with a secret in it) must not be served as the video, whether the whole file
 * or a range far into it is asked for; a real stored video and its ranges still are. Only those
 * unmarked copies cost a read of their first bytes apart from the download, and only for a range
 * that does not begin with them.
 */
const SECRET = 'vendor-side-secret-0123456789';
const PAGE = Buffer.from(`<html><body>${SECRET}${' '.repeat(2000)}</body></html>`);

let sim: SimServer;
let gw: TestGateway;
const lines: string[] = [];
/** Every blob the gateway opened, by name. */
const opened: string[] = [];

beforeAll(async () => {
  sim = await veo.simulator.start({ taskMs: 30 });
  gw = await startTestGateway({ ...upstreamsFor([{ module: veo, sim }]), log_level: 'info' }, { logSink: { write: (line: string) => lines.push(line) } });
  const blobs = gw.services.video.deps.blobs;
  const open = blobs.open.bind(blobs);
  blobs.open = (name, start, end) => {
    opened.push(name);
    return open(name, start, end);
  };
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

interface Finished {
  key: string;
  id: string;
  account: string;
  jobId: string;
  blob: string;
}

/** A finished Veo job whose operation carried the MP4 fixture inline. */
async function finishedJob(): Promise<Finished> {
  const { key, account } = await gw.newKey(10);
  const model = veo.simulator.demo(sim).models[0]!.name;
  const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'a fox', seconds: 4 } });
  expect(created.status, created.text).toBe(200);
  sim.inject(
    {
      kind: 'status',
      status: 200,
      json: { name: 'projects/p/locations/us-central1/publishers/google/models/m/operations/op-1', done: true, response: { videos: [{ bytesBase64Encoded: sampleMp4().toString('base64'), mimeType: 'video/mp4' }] } },
    },
    // Every poll: a job that cannot settle on this answer would otherwise settle on the simulator's own.
    1_000,
    /:fetchPredictOperation$/,
  );
  const done = await pollUntilDone(gw, key, created.json.id, 5_000).finally(() => sim.clearFaults());
  expect(done.status).toBe('completed');
  const jobId = gw.services.video.deps.sealer.open(created.json.id)!.j;
  const record = (await gw.services.store.getJob(jobId))!;
  expect(record.outputs[0]!.checkedWhenStored).toBe(true);
  return { key, id: created.json.id, account, jobId, blob: String(record.outputs[0]!.blob) };
}

/** Makes the job's stored copy one kept before inline results were checked: `bytes`, and no mark. */
async function storedBeforeTheCheck(job: Finished, bytes: Buffer): Promise<void> {
  await gw.services.video.deps.blobs.put(job.blob, bytes, 'video/mp4');
  const outputs = [{ blob: job.blob, size: bytes.length, mimeType: 'video/mp4' }];
  await (gw.services.store as SqlStore).driver.run('UPDATE jobs SET outputs = ? WHERE id = ?', [JSON.stringify(outputs), job.jobId]);
  gw.services.video.jobs.forget(job.jobId);
}

async function get(id: string, key: string, range?: string): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const res = await fetch(`${gw.url}/v1/videos/${id}/content`, { headers: { authorization: `Bearer ${key}`, connection: 'close', ...(range ? { range } : {}) } });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

/** A download's answer, and how many times it opened the stored copy. */
async function getCounting(job: Finished, range?: string): Promise<{ status: number; bytes: Buffer; opens: number }> {
  opened.length = 0;
  const r = await get(job.id, job.key, range);
  return { status: r.status, bytes: r.bytes, opens: opened.filter((n) => n === job.blob).length };
}

describe("the gateway's stored copy of an inline video", () => {
  it('a real MP4 is served whole and by range; an HTML page stored before the check is refused for every range, and stays billed', async () => {
    const real = await finishedJob();
    const all = await get(real.id, real.key);
    expect(all.status).toBe(200);
    expect(all.bytes.equals(sampleMp4())).toBe(true);
    const slice = await get(real.id, real.key, 'bytes=1000-1999');
    expect(slice.status).toBe(206);
    expect(slice.bytes.equals(sampleMp4().subarray(1000, 2000))).toBe(true);

    const hostile = await finishedJob();
    await storedBeforeTheCheck(hostile, PAGE);
    const billed = await gw.balance(hostile.account);
    expect(billed).toBe(10_000_000 - 400_000);
    lines.length = 0;
    const ranges = [undefined, 'bytes=0-', 'bytes=0-1', 'bytes=5-', 'bytes=12-1999'];
    for (const range of ranges) {
      const r = await get(hostile.id, hostile.key, range);
      expect(r.status, range).toBe(502);
      const text = r.bytes.toString();
      expect(JSON.parse(text).error.code).toBe('upstream_error');
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain('html');
    }
    expect(lines.filter((l) => l.includes('not the media asked for'))).toHaveLength(ranges.length);
    for (const l of lines) expect(l).not.toContain(SECRET);
    expect(await gw.balance(hostile.account)).toBe(billed);
  });

  it('a copy stored before the check that opens with an 8-byte free box ahead of an HTML page is refused, whole or by range', async () => {
    const hostile = await finishedJob();
    await storedBeforeTheCheck(hostile, Buffer.concat([Buffer.from([0, 0, 0, 8]), Buffer.from('free'), PAGE]));
    for (const range of [undefined, 'bytes=0-', 'bytes=0-19', 'bytes=100-1999']) {
      const r = await get(hostile.id, hostile.key, range);
      expect(r.status, range).toBe(502);
      expect(r.bytes.toString()).not.toContain(SECRET);
    }
  });

  it('a copy checked when stored is opened once per download; one stored before the check only when the range holds its first bytes', async () => {
    const mp4 = sampleMp4();
    const checked = await finishedJob();
    const unchecked = await finishedJob();
    await storedBeforeTheCheck(unchecked, mp4);
    const cases: [string | undefined, number, Buffer][] = [
      [undefined, 200, mp4],
      ['bytes=0-', 206, mp4],
      ['bytes=0-1999', 206, mp4.subarray(0, 2000)],
      ['bytes=0-1', 206, mp4.subarray(0, 2)],
      ['bytes=1000-1999', 206, mp4.subarray(1000, 2000)],
    ];
    for (const [range, status, bytes] of cases) {
      const fromChecked = await getCounting(checked, range);
      expect(fromChecked.status, range).toBe(status);
      expect(fromChecked.bytes.equals(bytes), range).toBe(true);
      expect(fromChecked.opens, range).toBe(1);

      const fromUnchecked = await getCounting(unchecked, range);
      expect(fromUnchecked.status, range).toBe(status);
      expect(fromUnchecked.bytes.equals(bytes), range).toBe(true);
      // Its first bytes are peeked from the download when it serves them, else read apart.
      const holdsHead = range === undefined || range === 'bytes=0-' || range === 'bytes=0-1999';
      expect(fromUnchecked.opens, range).toBe(holdsHead ? 1 : 2);
    }
  });
});
