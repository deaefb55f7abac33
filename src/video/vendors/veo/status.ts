import { isObject, omit, type Json, type JsonObject } from '../../../core/json.js';
import type { FailureCode, VendorStatus, VideoOutput } from '../../types.js';
import { DEFAULT_DURATION_SECONDS } from './names.js';
import { MODERATION } from './errors.js';

/**
 * Maps a `fetchPredictOperation` answer (a google.longrunning.Operation) to a job status:
 *   no `done`            -> processing
 *   done + error         -> failed (gRPC code and message)
 *   done + videos        -> completed (fewer videos than asked when some were filtered)
 *   done, no videos, raiMediaFilteredCount > 0 -> failed, content_policy_violation
 *   done, nothing at all -> failed, generation_failed
 * vendor_data is the operation minus `name` (the job id; it names the cloud project) and `done`
 * (the status), with inline base64 removed from `response.videos`; everything else is kept.
 */
export function parseOperation(json: Json | undefined, meta: JsonObject): VendorStatus {
  if (!isObject(json)) return { state: 'processing', vendorData: {} };
  const vendorData = operationData(json);
  const response = isObject(json['response']) ? json['response'] : undefined;
  const videos = response && Array.isArray(response['videos']) ? response['videos'] : [];
  if (response && Array.isArray(response['videos'])) vendorData['response'] = { ...response, videos: videos.map(stripBytes) };

  const done = json['done'] === true || json['done'] === 'true';
  if (!done) return { state: 'processing', vendorData };

  const error = json['error'];
  if (error !== undefined && error !== null) {
    const e = isObject(error) ? error : { message: String(error) };
    const code = grpcCode(e['code']);
    const text = typeof e['message'] === 'string' && e['message'] ? e['message'] : '';
    const message = text || `Vertex operation failed (code ${String(e['code'] ?? 'unknown')}).`;
    return { state: 'failed', code: failureFor(code, message), message, vendorData };
  }

  const outputs = videos.map(toOutput).filter((o): o is VideoOutput => o !== undefined);
  if (outputs.length > 0) {
    const d = meta['durationSeconds'];
    const perVideo = typeof d === 'number' && d > 0 ? d : DEFAULT_DURATION_SECONDS;
    // Vertex reports no duration: each returned video is billed at the requested length.
    return { state: 'completed', seconds: perVideo, billableSeconds: perVideo * outputs.length, outputs, vendorData };
  }

  const filtered = Number(response?.['raiMediaFilteredCount'] ?? 0);
  if (filtered > 0) {
    const reasons = response?.['raiMediaFilteredReasons'];
    const text = Array.isArray(reasons) ? reasons.filter((r) => typeof r === 'string').join(' ') : '';
    return {
      state: 'failed',
      code: 'content_policy_violation',
      message: text || 'Every generated video was removed by the responsible-AI safety filters.',
      vendorData,
    };
  }
  return { state: 'failed', code: 'generation_failed', message: 'The operation finished without any video.', vendorData };
}

/** An operation's fields other than its name (the task id) and `done` (the status). */
export function operationData(operation: JsonObject): JsonObject {
  return omit(operation, ['name', 'done']);
}

function stripBytes(v: Json): Json {
  return isObject(v) ? omit(v, ['bytesBase64Encoded']) : v;
}

function toOutput(v: Json): VideoOutput | undefined {
  if (!isObject(v)) return undefined;
  const mimeType = typeof v['mimeType'] === 'string' ? v['mimeType'] : 'video/mp4';
  if (typeof v['gcsUri'] === 'string' && v['gcsUri']) return { url: v['gcsUri'], mimeType };
  if (typeof v['bytesBase64Encoded'] === 'string' && v['bytesBase64Encoded']) return { inlineBase64: v['bytesBase64Encoded'], mimeType };
  return undefined;
}

const GRPC_NAMES: Record<string, number> = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
};

/** The operation's google.rpc.Code: a number, but proxies sometimes turn it into "3" or "INVALID_ARGUMENT". */
export function grpcCode(v: Json | undefined): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v !== 'string') return undefined;
  if (/^\s*\d+\s*$/.test(v)) return Number(v);
  return GRPC_NAMES[v.trim().toUpperCase()];
}

const MEDIA_NOUN = /\b(image|video|frame|mask|media|file|gcs|gs:\/\/|uri)/i;
const MEDIA_PROBLEM = /fetch|read|decod|access|load|download|reach|not found|corrupt|does not exist/i;

export function failureFor(code: number | undefined, message: string): FailureCode {
  if (MODERATION.test(message)) return 'content_policy_violation';
  if (code === 1) return 'cancelled';
  if (code === 4) return 'timeout';
  if (MEDIA_NOUN.test(message) && MEDIA_PROBLEM.test(message)) return 'invalid_media';
  if (code === 3 || code === 9 || code === 11) return 'unsupported_parameters';
  return 'generation_failed';
}
