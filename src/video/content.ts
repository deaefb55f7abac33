import type { Readable } from 'node:stream';
import { errors } from '../core/errors.js';
import { isObject } from '../core/json.js';
import type { StreamResponse, UpstreamTarget } from '../http/executor.js';
import { discard, pipeThrough } from '../http/streams.js';
import type { UpstreamRequest } from '../http/types.js';
import type { JobRecord } from '../store/types.js';
import type { VideoDeps } from './deps.js';
import { parseRange, sliceStream } from './range.js';
import { taskRefOf } from './refresh.js';
import type { VideoOutput } from './types.js';

export interface ContentReply {
  status: 200 | 206;
  headers: Record<string, string>;
  body: Readable;
}

const MAX_REDIRECTS = 5;
const AUTH_HEADERS = ['authorization', 'api-key', 'x-goog-api-key', 'x-api-key'];

/**
 * Streams a finished video: from the gateway's own copy when the vendor returned bytes inline,
 * else from the vendor (its authenticated content endpoint or its signed URL), following
 * redirects, forwarding Range, and slicing locally when the vendor ignores Range.
 */
export async function openContent(
  deps: VideoDeps,
  job: JobRecord,
  index: number,
  range: string | undefined,
  signal: AbortSignal,
): Promise<ContentReply> {
  if (job.state !== 'completed') throw errors.videoNotReady(job.state === 'failed' ? 'failed' : 'still processing');
  const out = job.outputs[index];
  if (!out || !isObject(out)) throw errors.notFound(`This job has no video at index ${index}.`, 'video_not_found');
  const mime = typeof out.mimeType === 'string' && out.mimeType.startsWith('video/') ? out.mimeType : 'video/mp4';

  if (typeof out.blob === 'string') {
    const gone = () => errors.notFound('The stored video is no longer available.', 'video_not_found');
    const size = await deps.blobs.size(out.blob);
    if (size === undefined) throw gone();
    const r = parseRange(range, size);
    if (r === 'unsatisfiable') throw errors.rangeNotSatisfiable(size);
    const headers: Record<string, string> = { 'content-type': mime, 'accept-ranges': 'bytes' };
    if (r) {
      headers['content-range'] = `bytes ${r.start}-${r.end}/${size}`;
      headers['content-length'] = String(r.end - r.start + 1);
    } else headers['content-length'] = String(size);
    const body = await deps.blobs.open(out.blob, r?.start, r?.end);
    if (!body) throw gone();
    return { status: r ? 206 : 200, headers, body };
  }

  const vendor = deps.vendors.get(job.vendor);
  const up = job.upstream ? deps.catalog.upstream(job.upstream) : undefined;
  if (!vendor || !up) throw errors.upstreamUnavailable('The upstream that made this video is not configured any more.');
  const output: VideoOutput = { url: typeof out.url === 'string' ? out.url : undefined, mimeType: mime };
  let req = await deps.client.authorize(up, vendor, vendor.buildContent(taskRefOf(job), output, up));
  if (range) req = { ...req, headers: { ...req.headers, range } };

  let res = await followRedirects(deps, req, up.timeoutMs, signal, up);
  if (res.status === 416) {
    discard(res.body);
    const total = /\/(\d+)$/.exec(res.headers['content-range'] ?? '')?.[1];
    throw errors.rangeNotSatisfiable(total ? Number(total) : 0);
  }
  if (res.status !== 200 && res.status !== 206) {
    discard(res.body);
    if (res.status === 404 || res.status === 410) throw errors.notFound('The vendor no longer has this video.', 'video_expired');
    throw errors.upstreamError(`The vendor answered ${res.status} for the video content.`);
  }
  const headers: Record<string, string> = { 'content-type': mime, 'accept-ranges': 'bytes' };
  const length = res.headers['content-length'];
  if (res.status === 206) {
    if (res.headers['content-range']) headers['content-range'] = res.headers['content-range'];
    if (length) headers['content-length'] = length;
    return { status: 206, headers, body: res.body };
  }
  const size = length && /^\d+$/.test(length) ? Number(length) : undefined;
  const r = parseRange(range, size);
  if (r === 'unsatisfiable') {
    discard(res.body);
    throw errors.rangeNotSatisfiable(size ?? 0);
  }
  if (r && size !== undefined) {
    headers['content-range'] = `bytes ${r.start}-${r.end}/${size}`;
    headers['content-length'] = String(r.end - r.start + 1);
    // An upstream failure mid-body must end the client's response too, and a client that leaves
    // must release the upstream body.
    return { status: 206, headers, body: pipeThrough(res.body, sliceStream(r.start, r.end)) };
  }
  if (length) headers['content-length'] = length;
  return { status: 200, headers, body: res.body };
}

async function followRedirects(
  deps: VideoDeps, first: UpstreamRequest, timeoutMs: number, signal: AbortSignal, target: UpstreamTarget,
): Promise<StreamResponse> {
  let req = first;
  for (let hop = 0; ; hop++) {
    const res = await deps.client.follow(req, timeoutMs, signal, target);
    const loc = res.headers['location'];
    if (![301, 302, 303, 307, 308].includes(res.status) || !loc) return res;
    discard(res.body);
    if (hop >= MAX_REDIRECTS) throw errors.upstreamError('Too many redirects fetching the video.');
    const next = new URL(loc, req.url);
    const headers = { ...req.headers };
    // Never carry vendor credentials to another origin (e.g. a CDN's signed URL).
    if (next.origin !== new URL(req.url).origin) for (const h of Object.keys(headers)) if (AUTH_HEADERS.includes(h.toLowerCase())) delete headers[h];
    req = { method: 'GET', url: next.toString(), headers };
  }
}

/**
 * A finished job's preview asset (thumbnail or spritesheet), from the vendor where it makes one.
 * Only an image is passed on: a vendor answering with anything else (the MP4 itself, say) is an
 * upstream error, never the video under another name.
 */
/** Whether the job's vendor makes this preview asset itself (declared, and its adapter can fetch it). */
export function vendorMakesVariant(deps: VideoDeps, job: JobRecord, variant: 'thumbnail' | 'spritesheet'): boolean {
  const up = job.upstream ? deps.catalog.upstream(job.upstream) : undefined;
  return !!(deps.capabilities(job.model)?.variants.includes(variant) && deps.vendors.get(job.vendor)?.buildVariant && up);
}

export async function openVariant(deps: VideoDeps, job: JobRecord, variant: 'thumbnail' | 'spritesheet', signal: AbortSignal): Promise<ContentReply> {
  if (job.state !== 'completed') throw errors.videoNotReady(job.state === 'failed' ? 'failed' : 'still processing');
  const vendor = deps.vendors.get(job.vendor);
  const up = job.upstream ? deps.catalog.upstream(job.upstream) : undefined;
  if (!vendorMakesVariant(deps, job, variant) || !vendor?.buildVariant || !up)
    throw errors.notFound(`No ${variant} is available for videos of '${job.model}'.`, 'variant_unavailable');
  const req = await deps.client.authorize(up, vendor, vendor.buildVariant(taskRefOf(job), variant, up));
  const res = await followRedirects(deps, req, up.timeoutMs, signal, up);
  const type = (res.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (res.status !== 200 || !type.startsWith('image/')) {
    discard(res.body);
    if (res.status === 404 || res.status === 410) throw errors.notFound(`The vendor no longer has this video's ${variant}.`, 'video_expired');
    throw errors.upstreamError(res.status === 200 ? `The vendor's ${variant} is not an image.` : `The vendor answered ${res.status} for the ${variant}.`);
  }
  const headers: Record<string, string> = { 'content-type': type };
  const length = res.headers['content-length'];
  if (length && /^\d+$/.test(length)) headers['content-length'] = length;
  return { status: 200, headers, body: res.body };
}
