import { retryAfterSeconds } from '../../../http/retry-after.js';
import { errors } from '../../../core/errors.js';
import { clip } from '../../../core/redact.js';
import { isObject, omit, type Json, type JsonObject } from '../../../core/json.js';
import { vendorNumber } from '../../../core/lossless-json.js';
import type { UpstreamResponse, UpstreamVerdict } from '../../../http/types.js';
import { isUsableSeconds } from '../../duration.js';
import type { CreatedTask, FailureCode, TaskRef, VendorStatus, VideoUsage } from '../../types.js';
import { DEFAULT_SECONDS } from './models.js';

function str(v: Json | undefined): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** A vendor figure above zero; one of more digits than a double holds is a marker (core/lossless-json.ts), read as its number. */
function positive(v: Json | undefined): number | undefined {
  const n = vendorNumber(v);
  return n !== undefined && Number.isFinite(n) && n > 0 ? n : undefined;
}

export function parseSeedanceCreate(res: UpstreamResponse, requestedSeconds: number): CreatedTask {
  const id = isObject(res.json) ? str(res.json.id) : undefined;
  if (!id) throw errors.upstreamError('Ark accepted the request but returned no task id.');
  return { taskId: id, meta: { seconds: requestedSeconds }, vendorData: vendorDataOf(res.json as JsonObject) };
}

/** Seconds of the finished video: frames / framespersecond when frames were used, else duration. */
export function actualSeconds(task: JsonObject, fallback: number): number {
  const frames = positive(task.frames);
  const fps = positive(task.framespersecond);
  // Checked after dividing too: huge frames over a tiny rate overflows to Infinity.
  if (frames !== undefined && fps !== undefined && isUsableSeconds(frames / fps)) return frames / fps;
  return positive(task.duration) ?? fallback;
}

const MODERATION = /SensitiveContent|RiskDetection|ContentSecurity/i;

export function seedanceFailureCode(code: string): FailureCode {
  if (MODERATION.test(code)) return 'content_policy_violation';
  if (/Invalid(Image|Video|Audio)?URL|Download|NotAccessible/i.test(code)) return 'invalid_media';
  if (/^(InvalidParameter|MissingParameter)/i.test(code)) return 'unsupported_parameters';
  return 'generation_failed';
}

/** The task object without what the job carries in standard form: id, status, video URL, token counts. */
function vendorDataOf(task: JsonObject): JsonObject {
  const out = omit(task, ['id', 'status']);
  if (isObject(task.content)) {
    const rest = omit(task.content, ['video_url']);
    if (Object.keys(rest).length > 0) out.content = rest;
    else delete out.content;
  }
  if (isObject(task.usage)) {
    // The counts the job's usage shows; one that is not a count stays here, as the vendor wrote it.
    const usage = task.usage;
    const rest = omit(usage, ['completion_tokens', 'total_tokens'].filter((k) => isCount(usage[k])));
    if (Object.keys(rest).length > 0) out.usage = rest;
    else delete out.usage;
  }
  return out;
}

function isCount(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 0;
}

function usageOf(task: JsonObject): VideoUsage | undefined {
  if (!isObject(task.usage)) return undefined;
  const u: VideoUsage = {};
  // Shown to the client as the job's usage: only a count that can be one (a whole number, not
  // negative, exact as a double); anything else is left out rather than passed on.
  if (isCount(task.usage.completion_tokens)) u.completion_tokens = task.usage.completion_tokens;
  if (isCount(task.usage.total_tokens)) u.total_tokens = task.usage.total_tokens;
  return Object.keys(u).length > 0 ? u : undefined;
}

export function parseSeedancePoll(res: UpstreamResponse, ref: TaskRef): VendorStatus {
  const task = isObject(res.json) ? res.json : {};
  const vendorData = vendorDataOf(task);
  switch (str(task.status)) {
    case 'succeeded': {
      const url = isObject(task.content) ? str(task.content.video_url) : undefined;
      if (!url) return { state: 'failed', code: 'generation_failed', message: 'The task succeeded without a video_url.', vendorData };
      const seconds = actualSeconds(task, positive(ref.meta.seconds) ?? DEFAULT_SECONDS);
      const usage = usageOf(task);
      return { state: 'completed', seconds, outputs: [{ url, mimeType: 'video/mp4' }], vendorData, ...(usage ? { usage } : {}) };
    }
    case 'failed': {
      const err = isObject(task.error) ? task.error : {};
      const code = str(err.code) ?? 'InternalServiceError';
      return { state: 'failed', code: seedanceFailureCode(code), message: str(err.message) ?? 'The video generation failed.', vendorData };
    }
    case 'cancelled':
      return { state: 'failed', code: 'cancelled', message: 'The task was cancelled while queued.', vendorData };
    case 'expired':
      return { state: 'failed', code: 'expired', message: 'The task exceeded its execution_expires_after window.', vendorData };
    case 'queued':
    case 'pending':
      return { state: 'processing', phase: 'queued', vendorData };
    case 'running':
    case 'processing':
      return { state: 'processing', phase: 'running', vendorData };
    default:
      return { state: 'processing', vendorData };
  }
}

/** Codes that mean this upstream account cannot serve the model: ours to fix, another upstream may work. */
const ACCOUNT_CODES = /^(AuthenticationError|AccountOverdueError|AccessDenied|ModelNotOpen|InvalidEndpoint|InvalidEndpointOrModel)/i;

export function classifySeedanceError(res: UpstreamResponse): UpstreamVerdict {
  const err = isObject(res.json) && isObject(res.json.error) ? res.json.error : {};
  const code = str(err.code);
  const message = str(err.message) ?? (clip(res.text.trim(), 300) || `Ark answered HTTP ${res.status}.`);
  const s = res.status;
  if (s === 429 || s === 408 || s >= 500) {
    return { kind: 'retryable', status: s, message, retryAfterSeconds: retryAfterSeconds(res.headers) };
  }
  if (s === 401 || s === 403 || (code && ACCOUNT_CODES.test(code))) return { kind: 'auth', status: s, message };
  if (code && MODERATION.test(code)) return { kind: 'moderation', message, code };
  const status = s === 404 || s === 413 || s === 422 ? s : 400;
  const param = str(err.param);
  return { kind: 'client', status, message, ...(code ? { code } : {}), ...(param ? { param } : {}) };
}
