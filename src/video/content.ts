import type { Readable } from 'node:stream';
import type { KeyModels } from '../auth/authorize.js';
import type { Agent } from 'undici';
import { errors, type GatewayError } from '../core/errors.js';
import { isObject } from '../core/json.js';
import type { StreamResponse } from '../http/executor.js';
import { guardedAgent, isRefusedAddress } from '../http/guarded-agent.js';
import { discard } from '../http/streams.js';
import type { Upstream, UpstreamRequest } from '../http/types.js';
import type { JobRecord } from '../store/job-types.js';
import type { VideoDeps } from './deps.js';
import { downloadRules, refusedLocation, route } from './download-rules.js';
import { contentRangeOf, forwardedRange, parseRange, sliceBody } from './range.js';
import { jobUpstream } from './job-upstream.js';
import { answeredRange, checkedImage, checkedVideo, notVideo } from './media-check.js';
import { openStoredCopy } from './stored-copy.js';
import { taskRefOf } from './refresh.js';
import { videoMediaType } from './media-type.js';
import type { VideoOutput } from './types.js';

/** Who asks for a job's bytes: an account, and the bearer key when the request carried one. */
export interface ContentViewer {
  accountId: string;
  key?: KeyModels;
}

/** Which bytes: the output's index, the variant (video by default), the client's Range header. */
export interface ContentAsk {
  index: number;
  variant?: string;
  range?: string;
  /** The request's: a client hanging up ends the vendor fetch. */
  signal: AbortSignal;
}

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
 * redirects, forwarding a single Range, and slicing locally when the vendor ignores it.
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
  // Jobs stored before the type was checked at settlement are checked here too.
  const mime = videoMediaType(out.mimeType);

  if (typeof out.blob === 'string') return openStoredCopy(deps, job, out, out.blob, mime, range);

  const vendor = deps.vendors.get(job.vendor);
  const up = jobUpstream(deps, job);
  if (!vendor || !up) throw errors.upstreamUnavailable('The upstream that made this video is not configured any more.');
  const output: VideoOutput = { url: typeof out.url === 'string' ? out.url : undefined, mimeType: mime };
  let req = await deps.client.authorize(up, vendor, vendor.buildContent(taskRefOf(job), output, up), signal);
  const sent = forwardedRange(range);
  if (sent) req = { ...req, headers: { ...req.headers, range: sent } };

  let res = await followRedirects(deps, req, signal, up, job.id);
  if (res.status === 416) {
    discard(res.body);
    const total = /\/(\d{1,15})$/.exec(res.headers['content-range'] ?? '')?.[1];
    throw errors.rangeNotSatisfiable(total ? Number(total) : 0);
  }
  if (res.status !== 200 && res.status !== 206) {
    discard(res.body);
    if (res.status === 404 || res.status === 410) throw errors.notFound('The vendor no longer has this video.', 'video_expired');
    throw errors.upstreamError(`The vendor answered ${res.status} for the video content.`);
  }
  // Before any byte reaches the client: a range is the one asked for, and the answer is the video,
  // not an error page under its name.
  const refusal = notVideo(deps, job.id, up);
  const answered = res.status === 206 ? answeredRange(refusal, res, sent) : undefined;
  const body = await checkedVideo(refusal, res, answered?.start ?? 0);
  const headers: Record<string, string> = { 'content-type': mime, 'accept-ranges': 'bytes' };
  const length = res.headers['content-length'];
  if (answered) {
    const bytes = answered.end - answered.start + 1;
    headers['content-range'] = contentRangeOf(answered);
    headers['content-length'] = String(bytes);
    // A declared Content-Length was checked to match; without one, the body is cut at the range's end.
    return { status: 206, headers, body: length === undefined ? sliceBody(body, 0, bytes - 1) : body };
  }
  const size = length && /^\d+$/.test(length) ? Number(length) : undefined;
  const r = parseRange(range, size);
  if (r === 'unsatisfiable') {
    discard(body);
    throw errors.rangeNotSatisfiable(size ?? 0);
  }
  if (r && size !== undefined) {
    headers['content-range'] = `bytes ${r.start}-${r.end}/${size}`;
    headers['content-length'] = String(r.end - r.start + 1);
    // The upstream body is stopped as soon as the range is complete; an upstream failure mid-body
    // ends the client's response too, and a client that leaves releases the upstream body.
    return { status: 206, headers, body: sliceBody(body, r.start, r.end) };
  }
  if (size !== undefined) headers['content-length'] = String(size);
  return { status: 200, headers, body };
}

/**
 * Sends the download and follows its redirects. Each hop's URL is checked first (`route`): a vendor
 * must not be able to point the gateway at its own network, whether by a redirect or by the
 * download URL it answered with.
 */
async function followRedirects(deps: VideoDeps, first: UpstreamRequest, signal: AbortSignal, up: Upstream, job: string): Promise<StreamResponse> {
  const rules = downloadRules(deps, up);
  const refuse = (url: URL, reason: string, error: GatewayError): GatewayError => {
    // The origin is enough to find the hop (and is what allowed_origins would list); the path and a
    // signed query string stay out of the log.
    deps.log.warn({ job, upstream: up.name, refused: url.origin === 'null' ? url.protocol : url.origin, reason }, 'video download: refused a location the vendor gave');
    return error;
  };
  // The media fetcher's long-lived guarded agent (connections to a vendor's CDN stay alive across
  // downloads); without a fetcher, one made for this download and closed at its end (the close
  // lets the answer being streamed finish first).
  let own: Agent | undefined;
  try {
    let req = first;
    for (let hop = 0; ; hop++) {
      let url: URL;
      try {
        url = new URL(req.url);
      } catch {
        throw errors.upstreamError('The vendor gave an unreadable location for the video download.');
      }
      const way = route(url, rules);
      if (typeof way === 'object') throw refuse(url, way.reason, refusedLocation(way.why));
      let res: StreamResponse;
      if (way === 'direct') res = await deps.client.follow(req, up.timeoutMs, signal, up);
      else {
        const checked = deps.media?.guardedAgent ?? (own ??= guardedAgent({ allowPrivateNetworks: false, connectTimeoutMs: up.timeoutMs }));
        try {
          res = await deps.client.follow(req, up.timeoutMs, signal, up, checked);
        } catch (e) {
          if (isRefusedAddress(e)) throw refuse(url, 'private address', refusedLocation('it is or resolves to a private or local network address'));
          throw e;
        }
      }
      const loc = res.headers['location'];
      if (![301, 302, 303, 307, 308].includes(res.status) || !loc) return res;
      discard(res.body);
      if (hop >= MAX_REDIRECTS) throw errors.upstreamError('Too many redirects fetching the video.');
      let next: URL;
      try {
        next = new URL(loc, url);
      } catch {
        throw errors.upstreamError('The vendor gave an unreadable location for the video download.');
      }
      const headers = { ...req.headers };
      // Never carry vendor credentials to another origin (e.g. a CDN's signed URL).
      if (next.origin !== url.origin) for (const h of Object.keys(headers)) if (AUTH_HEADERS.includes(h.toLowerCase())) delete headers[h];
      req = { method: 'GET', url: next.toString(), headers };
    }
  } finally {
    own?.close().catch(() => undefined);
  }
}

/**
 * A finished job's preview asset (thumbnail or spritesheet), from the vendor where it makes one.
 * Only an image is passed on: a vendor answering with anything else (the MP4 itself, say) is an
 * upstream error, never the video under another name.
 */
/** Whether the job's vendor makes this preview asset itself (declared, and its adapter can fetch it). */
export function vendorMakesVariant(deps: VideoDeps, job: JobRecord, variant: 'thumbnail' | 'spritesheet'): boolean {
  const up = jobUpstream(deps, job);
  return !!(deps.capabilities(job.model)?.variants.includes(variant) && deps.vendors.get(job.vendor)?.buildVariant && up);
}

/**
 * The image types a vendor's preview is passed on as: raster formats only. An SVG is a document a
 * browser runs scripts in, and it would be served from the gateway's own origin (the console's).
 */
const PREVIEW_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/gif']);

export async function openVariant(deps: VideoDeps, job: JobRecord, variant: 'thumbnail' | 'spritesheet', signal: AbortSignal): Promise<ContentReply> {
  if (job.state !== 'completed') throw errors.videoNotReady(job.state === 'failed' ? 'failed' : 'still processing');
  const vendor = deps.vendors.get(job.vendor);
  const up = jobUpstream(deps, job);
  if (!vendorMakesVariant(deps, job, variant) || !vendor?.buildVariant || !up)
    throw errors.notFound(`No ${variant} is available for videos of '${job.model}'.`, 'variant_unavailable');
  const req = await deps.client.authorize(up, vendor, vendor.buildVariant(taskRefOf(job), variant, up), signal);
  const res = await followRedirects(deps, req, signal, up, job.id);
  if (res.status !== 200) {
    discard(res.body);
    if (res.status === 404 || res.status === 410) throw errors.notFound(`The vendor no longer has this video's ${variant}.`, 'video_expired');
    throw errors.upstreamError(`The vendor answered ${res.status} for the ${variant}.`);
  }
  const refusal = { deps, job: job.id, up, what: `video ${variant}`, message: `The vendor's ${variant} is not a PNG, JPEG, WebP or GIF image.` };
  // Served as the type its bytes show, which is one of those the vendor may declare.
  const { body, type } = await checkedImage(refusal, res, PREVIEW_TYPES);
  const headers: Record<string, string> = { 'content-type': type };
  const length = res.headers['content-length'];
  if (length && /^\d+$/.test(length)) headers['content-length'] = length;
  return { status: 200, headers, body };
}
