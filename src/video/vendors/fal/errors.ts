import { retryAfterSeconds } from '../../../http/retry-after.js';
import { isObject, type Json } from '../../../core/json.js';
import type { UpstreamResponse, UpstreamVerdict } from '../../../http/types.js';
import type { FailureCode } from '../../types.js';

/**
 * fal answers errors in two shapes (both parsed here):
 * - model errors:   {"detail": [{"loc": ["body","duration"], "msg": "...", "type": "...", ...}]}  (usually 422)
 * - request errors: {"detail": "Runner disconnected", "error_type": "runner_disconnected"}  (5xx/4xx)
 * plus the legacy {"detail": "some text"}.
 */
export interface FalFailure {
  code: FailureCode;
  message: string;
  /** fal's own machine-readable type (detail[].type or error_type), kept for vendor_data. */
  vendorCode?: string;
  /** The offending input field, from detail[].loc. */
  param?: string;
}

const MEDIA_TYPES: ReadonlySet<string> = new Set([
  'file_download_error',
  'image_load_error',
  'video_load_error',
  'audio_load_error',
  'image_too_large',
  'image_too_small',
  'video_too_large',
  'file_too_large',
  'unsupported_image_format',
  'unsupported_video_format',
  'unsupported_audio_format',
]);

/** Input validation (pydantic-style types and fal's own range checks): the request asked for something unsupported. */
const VALIDATION_TYPE =
  /^(missing|extra_forbidden|literal_error|enum|value_error|type_error|assertion_error|(int|float|bool|string|list|dict|url|json|decimal)_\w+|(greater|less)_than(_equal)?|(string_)?too_(long|short)|multiple_of|invalid_\w+|unsupported_\w+|.*_out_of_range|one_of)$/;

const MODERATION_TYPE = /content_policy|moderation|nsfw|safety|unsafe/;

/** Maps a fal model-error `type` to the gateway's stable failure code. */
export function codeForModelError(type: string): FailureCode {
  const t = type.toLowerCase();
  if (MODERATION_TYPE.test(t)) return 'content_policy_violation';
  if (MEDIA_TYPES.has(t) || /^(image|video|audio|file)_(load|download)/.test(t)) return 'invalid_media';
  if (VALIDATION_TYPE.test(t)) return 'unsupported_parameters';
  return 'generation_failed';
}

/**
 * Request error types that describe how a queued request *ended*: the queue already retried the
 * runner (up to 10 times) before storing this outcome, so fetching the result again cannot help.
 */
const TERMINAL_REQUEST_ERRORS: ReadonlySet<string> = new Set([
  'request_timeout',
  'startup_timeout',
  'runner_scheduling_failure',
  'runner_connection_timeout',
  'runner_disconnected',
  'runner_connection_refused',
  'runner_connection_error',
  'runner_incomplete_response',
  'runner_server_error',
]);
const CANCEL_REQUEST_ERRORS: ReadonlySet<string> = new Set(['client_cancelled', 'client_disconnected']);

export function codeForRequestError(errorType: string): FailureCode {
  if (CANCEL_REQUEST_ERRORS.has(errorType)) return 'cancelled';
  if (MODERATION_TYPE.test(errorType)) return 'content_policy_violation';
  return 'generation_failed';
}

/** Reads a failure out of any fal error body (model error, request error, legacy, or a status body's `error`). */
export function failureOf(body: Json | undefined): FalFailure | undefined {
  if (!isObject(body)) return undefined;
  const detail = body['detail'];
  if (Array.isArray(detail) && detail.length > 0) {
    const items = detail.filter(isObject);
    const typed = items.find((d) => typeof d['type'] === 'string');
    const type = typed ? String(typed['type']) : undefined;
    const msgs = items.map((d) => (typeof d['msg'] === 'string' ? d['msg'] : '')).filter((m) => m.length > 0);
    return {
      code: type ? codeForModelError(type) : 'generation_failed',
      message: msgs.join('; ') || 'The model rejected the input.',
      vendorCode: type,
      param: typed ? paramOf(typed['loc']) : undefined,
    };
  }
  const errorType = typeof body['error_type'] === 'string' ? body['error_type'] : undefined;
  const text = typeof detail === 'string' ? detail : typeof body['error'] === 'string' ? body['error'] : undefined;
  if (text === undefined && errorType === undefined) return undefined;
  return {
    code: errorType ? codeForRequestError(errorType) : 'generation_failed',
    message: text ?? errorType ?? 'The request failed.',
    vendorCode: errorType,
  };
}

/** ["body", "duration"] -> "duration"; ["body", "image", 0] -> "image". */
function paramOf(loc: Json | undefined): string | undefined {
  if (!Array.isArray(loc)) return undefined;
  const names = loc.filter((x): x is string => typeof x === 'string' && x !== 'body');
  return names[0];
}

/**
 * Classifies a non-2xx fal answer. The same function serves submit, status, result and CDN answers,
 * so it is written for the result step's needs without hurting the others:
 * - a model error at the result step ends the job: moderation -> `moderation`, otherwise `client`
 *   with `code` = the FailureCode the job should carry (invalid_media, unsupported_parameters, ...);
 * - a request error whose `error_type` says the request ended (runner_*, request_timeout, cancelled)
 *   is a `client` verdict too: the queue already retried it, and a queue submit never produces these;
 * - everything else 5xx, and 429, is `retryable`; 401/403 (and 402 balance) are `auth`.
 * On `client` and `moderation` verdicts `code` is always a FailureCode (or absent), so the core can
 * use it as the failed job's code; fal's own type is appended to the message in parentheses.
 */
export function classify(res: UpstreamResponse): UpstreamVerdict {
  const status = res.status;
  const body = res.json;
  const failure = failureOf(body);
  const message = failure?.message ?? fallbackMessage(res);
  if (status === 401 || status === 403 || status === 402) return { kind: 'auth', status, message };
  if (status === 429) return { kind: 'retryable', status, message, retryAfterSeconds: retryAfterSeconds(res.headers) };
  const isModelError = isObject(body) && Array.isArray(body['detail']);
  if (failure && isModelError) {
    if (failure.code === 'content_policy_violation') return { kind: 'moderation', message: tagged(failure), code: failure.code };
    return { kind: 'client', status: status === 400 || status === 413 ? status : 422, message: tagged(failure), code: failure.code, param: failure.param };
  }
  const errorType = failure?.vendorCode ?? res.headers['x-fal-error-type'];
  if (errorType && (TERMINAL_REQUEST_ERRORS.has(errorType) || CANCEL_REQUEST_ERRORS.has(errorType))) {
    return { kind: 'client', status: 422, message: `${message} (${errorType})`, code: codeForRequestError(errorType) };
  }
  if (status >= 500 || status === 408) return { kind: 'retryable', status, message, retryAfterSeconds: retryAfterSeconds(res.headers) };
  const shown = errorType ? `${message} (${errorType})` : message;
  if (status === 404 || status === 413) return { kind: 'client', status, message: shown };
  return { kind: 'client', status: status === 422 ? 422 : 400, message: shown };
}

function tagged(f: FalFailure): string {
  return f.vendorCode ? `${f.message} (${f.vendorCode})` : f.message;
}

function fallbackMessage(res: UpstreamResponse): string {
  const text = res.text.trim();
  if (text.length > 0 && text.length <= 500 && !text.startsWith('<')) return text;
  return `fal answered HTTP ${res.status}`;
}
