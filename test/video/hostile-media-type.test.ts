import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4 } from '../../src/sim/media.js';
import { videoMediaType } from '../../src/video/media-type.js';
import { videoModule as veo } from '../../src/video/vendors/veo/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startLocalS3, type LocalS3 } from '../helpers/s3.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * The media type a vendor declares for its video (Veo's `mimeType`) ends up as the Content-Type of
 * the gateway's download and of the stored object. A hostile or broken one (a line break, a
 * character no header may carry, a non-video type) must not fail the paid video's download with a
 * 500, reach the answer's headers, or keep the job from settling when the copy goes to S3.
 */
let sim: SimServer;
let s3: LocalS3;
let local: TestGateway;
let onS3: TestGateway;

beforeAll(async () => {
  sim = await veo.simulator.start({ taskMs: 50 });
  s3 = await startLocalS3();
  local = await startTestGateway(upstreamsFor([{ module: veo, sim }]));
  onS3 = await startTestGateway({ ...upstreamsFor([{ module: veo, sim }]), video: { blobs: s3.config('media-type/') } });
});
afterAll(async () => {
  await local?.close();
  await onS3?.close();
  await sim?.close();
  await s3?.close();
});

// A declared document type (text/html) fails the job instead: test/video/inline-not-video.test.ts.
const HOSTILE = ['video/mp4\r\nset-cookie: gw_console=planted; Path=/', 'video/mp4\u2028', 'image/png', 'video/mp4; codecs="avc1"'];

/** A Veo job whose finished operation carries the video inline under `mimeType`. */
async function veoJobDeclaring(gw: TestGateway, mimeType: string): Promise<{ key: string; id: string; account: string }> {
  const { key, account } = await gw.newKey(10);
  const model = veo.simulator.demo(sim).models[0]!.name;
  const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'a fox', seconds: 4 } });
  expect(created.status, created.text).toBe(200);
  sim.inject(
    {
      kind: 'status',
      status: 200,
      json: { name: 'projects/p/locations/us-central1/publishers/google/models/m/operations/op-1', done: true, response: { videos: [{ bytesBase64Encoded: sampleMp4().toString('base64'), mimeType }] } },
    },
    // Every poll: a job that cannot settle on this answer would otherwise settle on the simulator's own.
    1_000,
    /:fetchPredictOperation$/,
  );
  return { key, id: created.json.id, account };
}

describe('a vendor-declared media type', () => {
  for (const [name, gw] of [
    ['local blobs', () => local],
    ['S3 blobs', () => onS3],
  ] as const) {
    it(`never breaks or reaches the download's headers (${name})`, async () => {
      for (const declared of HOSTILE) {
        const { key, id, account } = await veoJobDeclaring(gw(), declared);
        const done = await pollUntilDone(gw(), key, id, 3_000).finally(() => sim.clearFaults());
        expect(done.status, JSON.stringify(declared)).toBe('completed');
        expect(await gw().balance(account)).toBe(10_000_000 - 400_000);
        const r = await fetch(`${gw().url}/v1/videos/${id}/content`, { headers: { authorization: `Bearer ${key}` } });
        const bytes = Buffer.from(await r.arrayBuffer());
        expect(r.status, JSON.stringify(declared)).toBe(200);
        expect(r.headers.get('content-type')).toBe('video/mp4');
        expect(r.headers.get('set-cookie')).toBeNull();
        expect(bytes.equals(sampleMp4())).toBe(true);
        // What is stored is the checked type, so every later download is checked too.
        const job = (await gw().services.store.getJob(gw().services.video.deps.sealer.open(id)!.j))!;
        expect(job.outputs[0]!.mimeType).toBe('video/mp4');
      }
    });
  }

  it('keeps a container type the gateway recognises, lower-cased and without parameters; nothing else', () => {
    expect(videoMediaType('video/webm')).toBe('video/webm');
    expect(videoMediaType('Video/QuickTime; x=1')).toBe('video/quicktime');
    expect(videoMediaType('VIDEO/MP4')).toBe('video/mp4');
    // A subtype is no place for what a vendor echoes: a well-formed one that quotes a credential.
    expect(videoMediaType('video/Bearerya29.SECRETveotoken0123456789')).toBe('video/mp4');
    expect(videoMediaType('video/x-matroska')).toBe('video/mp4');
    expect(videoMediaType('video/')).toBe('video/mp4');
    expect(videoMediaType('image/svg+xml')).toBe('video/mp4');
    expect(videoMediaType(undefined)).toBe('video/mp4');
    expect(videoMediaType(`video/${'a'.repeat(200)}`)).toBe('video/mp4');
  });
});
