import { isObject, omit, type Json, type JsonObject } from '../../../core/json.js';
import { vendorNumber } from '../../../core/lossless-json.js';
import { isUsableSeconds } from '../../duration.js';
import type { VendorStatus, VideoOutput } from '../../types.js';
import { failureOf } from './errors.js';
import { parseSeconds } from './families.js';

/**
 * The queue status enum. fal documents IN_QUEUE, IN_PROGRESS and COMPLETED; third-party schemas
 * also list FAILED and CANCELED, so those are mapped too. Anything else keeps the job processing.
 */
export type QueueStatus = 'IN_QUEUE' | 'IN_PROGRESS' | 'COMPLETED' | 'FAILED' | 'CANCELED' | 'CANCELLED';

/** A status answer carries `status`; a model result never does (it carries the model's output). */
export function isStatusPayload(body: Json | undefined): body is JsonObject {
  return isObject(body) && typeof body['status'] === 'string' && !('video' in body) && !('videos' in body);
}

export type StatusStep =
  | { step: 'processing'; phase?: 'queued' | 'running'; vendorData: JsonObject }
  | { step: 'fetch_result'; responseUrl?: string }
  | { step: 'done'; status: VendorStatus };

/** Reads one status answer: still running, finished (fetch the result), or already known to have failed. */
export function readStatus(body: JsonObject): StatusStep {
  const status = String(body['status']).toUpperCase();
  const vendorData = omit(body, ['status']);
  switch (status) {
    case 'IN_QUEUE':
      return { step: 'processing', phase: 'queued', vendorData };
    case 'IN_PROGRESS':
      return { step: 'processing', phase: 'running', vendorData };
    case 'CANCELED':
    case 'CANCELLED':
      return {
        step: 'done',
        status: { state: 'failed', code: 'cancelled', message: messageOf(body, 'The request was cancelled.'), vendorData },
      };
    case 'FAILED':
    case 'COMPLETED': {
      // A completed status may already say that the request failed; then the result fetch is skipped.
      const failure = 'error' in body || 'error_type' in body || status === 'FAILED' ? failureOf(body) : undefined;
      if (failure) return { step: 'done', status: { state: 'failed', code: failure.code, message: failure.message, vendorData } };
      if (status === 'FAILED') {
        return { step: 'done', status: { state: 'failed', code: 'generation_failed', message: 'The request failed.', vendorData } };
      }
      const url = body['response_url'];
      return { step: 'fetch_result', responseUrl: typeof url === 'string' ? url : undefined };
    }
    default:
      return { step: 'processing', vendorData };
  }
}

function messageOf(body: JsonObject, fallback: string): string {
  const m = body['error'] ?? body['detail'];
  return typeof m === 'string' ? m : fallback;
}

/**
 * Reads a model result (2xx). Outputs come from `video` or `videos[]`; a `data:` URL (fal's
 * sync_mode) becomes inline base64 and is left out of vendor_data. Seconds come from the result
 * when it reports them (video.duration, num_frames/fps, or a top-level duration), else from what
 * was sent (`sentSeconds`).
 */
export function readResult(body: Json | undefined, sentSeconds: number): VendorStatus {
  if (!isObject(body)) {
    return { state: 'failed', code: 'generation_failed', message: 'fal returned a result that is not a JSON object.', vendorData: {} };
  }
  const files = videoFiles(body);
  if (files.length === 0) {
    const failure = failureOf(body);
    return {
      state: 'failed',
      code: failure?.code ?? 'generation_failed',
      message: failure?.message ?? 'The result holds no video.',
      vendorData: body,
    };
  }
  const outputs: VideoOutput[] = [];
  const seconds: number[] = [];
  // parseSeconds reads any spelling of a number; only one that can be a duration is used.
  const top = parseSeconds(body['duration']);
  const topLevel = isUsableSeconds(top) ? top : undefined;
  for (const f of files) {
    outputs.push(outputOf(f));
    seconds.push(secondsOf(f) ?? topLevel ?? sentSeconds);
  }
  const vendorData: JsonObject = { ...body };
  if ('video' in body) vendorData['video'] = withoutInline(body['video']!);
  if (Array.isArray(body['videos'])) vendorData['videos'] = body['videos'].map(withoutInline);
  return {
    state: 'completed',
    seconds: seconds[0]!,
    billableSeconds: seconds.reduce((a, b) => a + b, 0),
    outputs,
    vendorData,
  };
}

/** A fal File object ({url, content_type, ...}); some models return a bare URL string instead. */
type FalFile = JsonObject;

function videoFiles(body: JsonObject): FalFile[] {
  const list: Json[] = [];
  if (body['video'] !== undefined && body['video'] !== null) list.push(body['video']);
  if (Array.isArray(body['videos'])) list.push(...body['videos']);
  const out: FalFile[] = [];
  for (const v of list) {
    if (typeof v === 'string' && v.length > 0) out.push({ url: v });
    else if (isObject(v) && typeof v['url'] === 'string' && v['url'].length > 0) out.push(v);
  }
  return out;
}

const DATA_URL = /^data:([^;,]+)?(;[^,]*)?;base64,/i;

function outputOf(f: FalFile): VideoOutput {
  const url = String(f['url']);
  const mime = typeof f['content_type'] === 'string' ? f['content_type'] : undefined;
  const m = DATA_URL.exec(url);
  if (m) return { inlineBase64: url.slice(m[0].length), mimeType: m[1] ?? mime ?? 'video/mp4' };
  return mime ? { url, mimeType: mime } : { url };
}

function withoutInline(v: Json): Json {
  if (typeof v === 'string') return DATA_URL.test(v) ? '[inline video]' : v;
  if (isObject(v) && typeof v['url'] === 'string' && DATA_URL.test(v['url'])) return omit(v, ['url']);
  return v;
}

function secondsOf(f: FalFile): number | undefined {
  const d = parseSeconds(f['duration']);
  if (isUsableSeconds(d)) return d;
  const frames = vendorNumber(f['num_frames']);
  const fps = vendorNumber(f['fps']);
  // Checked after dividing too: huge frames over a tiny fps overflows to Infinity.
  if (frames !== undefined && fps !== undefined && frames > 0 && fps > 0 && isUsableSeconds(frames / fps)) return frames / fps;
  return undefined;
}
