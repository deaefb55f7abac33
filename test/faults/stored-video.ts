import { expect } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4 } from '../../src/sim/media.js';
import { videoModules } from '../../src/video/vendors/registry.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';
import { eventually, httpCall } from './client.js';

export interface StoredVideo {
  sim: SimServer;
  gw: TestGateway;
  key: string;
  /** The completed job's public id. */
  jobId: string;
}

/**
 * A gateway that keeps its videos itself (Veo without a storage bucket returns the bytes inline, and
 * the gateway stores them in its blob store: local files, or the S3 of `extra.video.blobs`), with
 * one completed job. `extra` is merged into the gateway's config.
 */
export async function storedVideo(extra: Record<string, unknown> = {}): Promise<StoredVideo> {
  const veo = videoModules.find((m) => m.vendor.id === 'veo')!;
  const sim = await veo.simulator.start({ taskMs: 30 });
  const cfg = upstreamsFor([{ module: veo, sim }]);
  delete cfg.upstreams[0]!.storage_uri;
  const gw = await startTestGateway({ ...cfg, ...extra });
  const { key } = await gw.newKey(100);
  const created = await httpCall(`${gw.url}/v1/videos/generations`, { key, body: { model: 'veo-3.1-generate-001', prompt: 'waves' } });
  expect(created.status, created.body.toString()).toBe(200);
  let job: any;
  await eventually(async () => {
    job = (await httpCall(`${gw.url}/v1/videos/${created.json.id}`, { key })).json;
    return job.status !== 'processing' && job.status !== 'queued';
  }, 20_000);
  expect(job.status).toBe('completed');
  return { sim, gw, key, jobId: job.id };
}

/** The blob name of the job's first stored output. */
export async function storedBlobName(s: StoredVideo): Promise<string> {
  const record = (await s.gw.services.store.getJob(s.gw.services.video.deps.sealer.open(s.jobId)!.j))!;
  return String(record.outputs[0]!.blob);
}

/** `size` bytes of stored video: the MP4 fixture (the gateway checks a stored copy starts like a video), then filler. */
export function largeStoredCopy(size: number): Buffer {
  const head = sampleMp4();
  return Buffer.concat([head, Buffer.alloc(size - head.length, 7)]);
}
