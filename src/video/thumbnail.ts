import { Readable } from 'node:stream';
import { errors } from '../core/errors.js';
import type { JobRecord } from '../store/job-types.js';
import type { ContentReply } from './content.js';
import { openContent } from './content.js';
import type { VideoDeps } from './deps.js';

/** Where a gateway-made thumbnail is kept: one per job, removed with the job's other blobs. */
export function thumbnailBlob(jobId: string): string {
  return `thumbnails/${jobId.replace(/[^A-Za-z0-9_-]/g, '_')}.jpg`;
}

/**
 * A thumbnail the gateway makes itself for a finished job whose vendor makes none: a frame a little
 * into the video (the very first is often black), extracted once and then served from the blob
 * store. Without ffmpeg the variant stays unavailable (404), as it was.
 */
export async function gatewayThumbnail(deps: VideoDeps, job: JobRecord, signal: AbortSignal): Promise<ContentReply> {
  if (job.state !== 'completed') throw errors.videoNotReady(job.state === 'failed' ? 'failed' : 'still processing');
  const name = thumbnailBlob(job.id);
  const cached = await serveBlob(deps, name);
  if (cached) return cached;
  if (!deps.frames || !(await deps.frames.available()))
    throw errors.notFound(`No thumbnail is available for videos of '${job.model}' (the gateway cannot make one here).`, 'variant_unavailable');
  const video = await openContent(deps, job, 0, undefined, signal);
  const seconds = typeof job.seconds === 'number' && job.seconds > 0 ? job.seconds : 1;
  const image = await deps.frames.extract(video.body, Math.min(1, seconds / 3), signal);
  // Kept for the next reader (and the other instances); a failed write only costs a re-extraction.
  await deps.blobs.put(name, image, 'image/jpeg').catch((e) => deps.log.warn({ job: job.id, err: (e as Error).message }, 'thumbnail not cached'));
  return { status: 200, headers: { 'content-type': 'image/jpeg', 'content-length': String(image.length) }, body: Readable.from([image]) };
}

async function serveBlob(deps: VideoDeps, name: string): Promise<ContentReply | undefined> {
  const size = await deps.blobs.size(name);
  if (size === undefined) return undefined;
  const body = await deps.blobs.open(name);
  if (!body) return undefined;
  return { status: 200, headers: { 'content-type': 'image/jpeg', 'content-length': String(size) }, body };
}
