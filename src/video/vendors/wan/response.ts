import { retryAfterSeconds } from '../../../http/retry-after.js';
import { errors } from '../../../core/errors.js';
import { clip } from '../../../core/redact.js';
import { isObject, omit, type Json, type JsonObject } from '../../../core/json.js';
import { vendorNumber } from '../../../core/lossless-json.js';
import type { UpstreamResponse, UpstreamVerdict } from '../../../http/types.js';
import type { CreatedTask, FailureCode, TaskRef, VendorStatus } from '../../types.js';
import { DEFAULT_SECONDS } from './models.js';

function str(v: Json | undefined): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** A vendor figure above zero: a number, a marker of one with more digits than a double holds (core/lossless-json.ts), or a numeric string. */
function num(v: Json | undefined): number | undefined {
  const n = vendorNumber(v) ?? (typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

export function parseWanCreate(res: UpstreamResponse, requestedSeconds: number): CreatedTask {
  const output = isObject(res.json) && isObject(res.json.output) ? res.json.output : undefined;
  const taskId = output ? str(output.task_id) : undefined;
  if (!taskId) throw errors.upstreamError('DashScope accepted the request but returned no task id.');
  return { taskId, meta: { seconds: requestedSeconds }, vendorData: vendorDataOf(res.json as JsonObject) };
}

/**
 * Output seconds from the task's usage. The name drifted across generations (`video_duration` on
 * wan2.1/2.2, `duration` later), and for reference/edit models `duration` also counts the input video,
 * so the output-only figure wins when the vendor reports it.
 */
export function actualSeconds(usage: JsonObject, fallback: number): number {
  const output = num(usage.output_video_duration) ?? num(usage.video_duration);
  if (output !== undefined) return output;
  const total = num(usage.duration);
  if (total === undefined) return fallback;
  const inputPart = num(usage.input_video_duration) ?? 0;
  return total - inputPart > 0 ? total - inputPart : total;
}

export function wanFailureCode(code: string): FailureCode {
  const c = code.toLowerCase().replace(/_/g, '');
  if (c.includes('datainspectionfailed') || c.includes('ipinfringement')) return 'content_policy_violation';
  if (c === 'invalidparameter.datainspection' || c.includes('invalidurl') || c.includes('download') || c.includes('invalidfile')) {
    return 'invalid_media';
  }
  if (c.startsWith('invalidparameter')) return 'unsupported_parameters';
  return 'generation_failed';
}

/** The payload without the fields the job carries in standard form (status, id, video URL). */
function vendorDataOf(payload: JsonObject): JsonObject {
  const out: JsonObject = { ...payload };
  if (isObject(payload.output)) out.output = omit(payload.output, ['task_id', 'task_status', 'video_url']);
  return out;
}

export function parseWanPoll(res: UpstreamResponse, task: TaskRef): VendorStatus {
  const payload = isObject(res.json) ? res.json : {};
  const output = isObject(payload.output) ? payload.output : {};
  const usage = isObject(payload.usage) ? payload.usage : {};
  const vendorData = vendorDataOf(payload);
  const status = str(output.task_status);
  switch (status) {
    case 'SUCCEEDED': {
      const url = str(output.video_url);
      if (!url) return { state: 'failed', code: 'generation_failed', message: 'The task succeeded without a video_url.', vendorData };
      const fallback = num(task.meta.seconds) ?? DEFAULT_SECONDS;
      return { state: 'completed', seconds: actualSeconds(usage, fallback), outputs: [{ url, mimeType: 'video/mp4' }], vendorData };
    }
    case 'FAILED': {
      const code = str(output.code) ?? str(payload.code) ?? 'InternalError';
      const message = str(output.message) ?? str(payload.message) ?? 'The video generation failed.';
      return { state: 'failed', code: wanFailureCode(code), message, vendorData };
    }
    case 'CANCELED':
      return { state: 'failed', code: 'cancelled', message: 'The task was cancelled.', vendorData };
    case 'UNKNOWN':
      // DashScope forgets tasks after 24 hours; an UNKNOWN task can never finish.
      return { state: 'failed', code: 'expired', message: 'The task is unknown to DashScope or has expired (task ids live 24 hours).', vendorData };
    case 'PENDING':
      return { state: 'processing', phase: 'queued', vendorData };
    case 'RUNNING':
      return { state: 'processing', phase: 'running', vendorData };
    default:
      return { state: 'processing', vendorData };
  }
}

const AUTH_CODES = /^(InvalidApiKey|Arrearage|AccessDenied)/i;
const MODERATION_CODES = /^(DataInspectionFailed|data_inspection_failed|IPInfringementSuspect)/i;

export function classifyWanError(res: UpstreamResponse): UpstreamVerdict {
  const body = isObject(res.json) ? res.json : {};
  const code = str(body.code);
  const message = str(body.message) ?? (clip(res.text.trim(), 300) || `DashScope answered HTTP ${res.status}.`);
  const s = res.status;
  if (s === 429 || s === 408 || s >= 500 || (code && /^Throttling/i.test(code))) {
    return { kind: 'retryable', status: s, message, retryAfterSeconds: retryAfterSeconds(res.headers) };
  }
  // Keys are region-bound, models must be enabled per account, arrears stop the account: all ours to fix.
  if (s === 401 || s === 403 || (code && AUTH_CODES.test(code))) return { kind: 'auth', status: s, message };
  if (code && MODERATION_CODES.test(code)) return { kind: 'moderation', message, code };
  const status = s === 404 || s === 413 || s === 422 ? s : 400;
  return code ? { kind: 'client', status, message, code } : { kind: 'client', status, message };
}
