import { errors } from '../../../core/errors.js';
import { deepMerge, isObject, type JsonObject } from '../../../core/json.js';
import { foldCommonDuration, reportedSeconds, secondsParamOf } from '../../duration.js';
import type { Upstream, UpstreamRequest, UpstreamResponse } from '../../../http/types.js';
import type { CreateInput, CreatedTask, FailureCode, TaskRef, VendorStatus, VideoVendor } from '../../types.js';
import { classifyOpenAiStyle } from '../../../protocols/openai/errors.js';
import { pickSize, readNumber } from '../../../protocols/openai/video-sizes.js';
import { authHeaders, videoUrl } from './http.js';
import { extensionSeconds, soraDerivations } from './derive.js';
import { soraCharacters } from './characters.js';

/** What OpenAI uses when `seconds` is omitted. */
export const SORA_DEFAULT_SECONDS = 4;
/**
 * `POST /v1/videos` takes `seconds` "4", "8" or "12" (the API reference's VideoSeconds enum, also in
 * openai-node's resources/videos.ts); longer clips are made by extending a video, not by create.
 */
export const SORA_SECONDS: readonly number[] = [4, 8, 12];

const LABEL = 'sora (OpenAI)';

/** `secondsParam`: the field the client gave the length in (`duration` stands in for `seconds`). */
function validate(input: CreateInput, secondsParam: 'seconds' | 'duration' = 'seconds'): void {
  const { std } = input;
  // A shape that names no size is refused here, before anything is held or stored.
  pickSize(std);
  if (std.seconds !== undefined && !SORA_SECONDS.includes(std.seconds)) {
    throw errors.invalidRequest(
      `${secondsParam} must be one of ${SORA_SECONDS.join(', ')} for ${input.model}; got ${std.seconds}.`,
      secondsParam,
    );
  }
  const firsts = std.frameImages.filter((f) => f.frameType === 'first_frame');
  if (std.frameImages.some((f) => f.frameType === 'last_frame')) {
    // A pinned frame is a hard constraint; dropping it silently would return a different video.
    throw errors.invalidRequest(`${input.model} can pin only the first frame; last_frame is not supported.`, 'frame_images');
  }
  if (firsts.length > 1) throw errors.invalidRequest('Only one first_frame image can be given.', 'frame_images');
}

function buildCreate(input: CreateInput, up: Upstream): UpstreamRequest {
  const { std, native } = input;
  const derived: JsonObject = { model: input.upstreamModel, prompt: std.prompt };
  if (std.seconds !== undefined) derived.seconds = String(std.seconds);
  const size = pickSize(std);
  if (size) derived.size = `${size.width}x${size.height}`;
  const first = std.frameImages.find((f) => f.frameType === 'first_frame');
  // A native input_reference replaces the derived one whole ({file_id} must not gain an image_url).
  if (first && native.input_reference === undefined) derived.input_reference = { image_url: first.url };
  return {
    method: 'POST',
    url: videoUrl(up),
    headers: { ...authHeaders(up), 'Content-Type': 'application/json' },
    body: deepMerge(derived, native),
  };
}

function parseCreate(res: UpstreamResponse, input: CreateInput): CreatedTask {
  const v = res.json;
  if (!isObject(v) || typeof v.id !== 'string' || v.id === '') {
    throw errors.upstreamError(`${LABEL} accepted the job but its answer carried no video id.`);
  }
  // The create answers the video object a poll does: kept whole, as a poll's is.
  return { taskId: v.id, meta: { seconds: input.std.seconds ?? SORA_DEFAULT_SECONDS }, vendorData: { ...v } };
}

function buildPoll(task: TaskRef, up: Upstream): UpstreamRequest {
  return { method: 'GET', url: videoUrl(up, task.taskId), headers: authHeaders(up) };
}

/** The real failure codes are not all documented, so the stable code is chosen by what they say. */
export function soraFailureCode(code: string | undefined, message: string): FailureCode {
  const s = `${code ?? ''} ${message}`;
  if (/moderat|content[_ ]?polic|content[_ ]?filter|safety|guardrail/i.test(s)) return 'content_policy_violation';
  if (/cancel/i.test(code ?? '')) return 'cancelled';
  if (/expire/i.test(code ?? '')) return 'expired';
  if (/input[_ ]?reference|image|inpaint|media|download|fetch/i.test(s)) return 'invalid_media';
  if (/unsupported|invalid[_ ](size|seconds)|duration|resolution|combination/i.test(s)) return 'unsupported_parameters';
  return 'generation_failed';
}

function parsePoll(res: UpstreamResponse, task: TaskRef, up: Upstream): VendorStatus {
  const v = res.json;
  if (!isObject(v)) throw errors.upstreamError(`${LABEL} answered a poll with something that is not a video object.`);
  // The whole object is kept: it holds no bytes, and fields newer than our mapping stay visible.
  const vendorData: JsonObject = { ...v };
  const status = typeof v.status === 'string' ? v.status.toLowerCase() : '';
  const progress = readNumber(v.progress);
  switch (status) {
    case 'completed': {
      const outputs = [{ url: videoUrl(up, task.taskId, '/content'), mimeType: 'video/mp4' }];
      if (task.meta.op === 'extend') return { state: 'completed', ...extensionSeconds(v.seconds, task.meta), outputs, vendorData };
      // A figure that is no duration (zero, negative, not a number) counts as missing.
      const seconds = reportedSeconds(v.seconds) ?? reportedSeconds(task.meta.seconds) ?? SORA_DEFAULT_SECONDS;
      return {
        state: 'completed',
        seconds,
        billableSeconds: seconds,
        outputs,
        vendorData,
      };
    }
    case 'failed': {
      const err = isObject(v.error) ? v.error : {};
      const code = typeof err.code === 'string' ? err.code : undefined;
      const message = typeof err.message === 'string' && err.message !== '' ? err.message : 'Video generation failed.';
      return { state: 'failed', code: soraFailureCode(code, message), message, vendorData };
    }
    // Not in the documented enum; mapped so that a job that ends this way does not poll forever.
    case 'cancelled':
    case 'canceled':
      return { state: 'failed', code: 'cancelled', message: 'The video job was cancelled.', vendorData };
    case 'expired':
      return { state: 'failed', code: 'expired', message: 'The video job expired.', vendorData };
    case 'queued':
    case 'in_progress':
      return { state: 'processing', phase: status === 'queued' ? 'queued' : 'running', ...(progress !== undefined ? { progress } : {}), vendorData };
    default:
      return { state: 'processing', ...(progress !== undefined ? { progress } : {}), vendorData };
  }
}

function buildContent(task: TaskRef, _output: unknown, up: Upstream): UpstreamRequest {
  // Always rebuilt from the task id and this upstream's origin, so the key only goes where it belongs.
  return {
    method: 'GET',
    url: videoUrl(up, task.taskId, '/content'),
    headers: { ...authHeaders(up), Accept: 'application/binary' },
  };
}

/** POST /v1/videos/{id}/remix: a new video from a finished one and a new prompt (same duration and size). */
function buildRemix(task: TaskRef, prompt: string, up: Upstream): UpstreamRequest {
  return { method: 'POST', url: videoUrl(up, task.taskId, '/remix'), headers: { ...authHeaders(up), 'Content-Type': 'application/json' }, body: { prompt } };
}

/** The same content endpoint with `variant=thumbnail|spritesheet` (images made by OpenAI). */
function buildVariant(task: TaskRef, variant: 'thumbnail' | 'spritesheet', up: Upstream): UpstreamRequest {
  return { method: 'GET', url: `${videoUrl(up, task.taskId, '/content')}?variant=${variant}`, headers: authHeaders(up) };
}

export const soraVendor: VideoVendor = {
  id: 'sora',
  label: LABEL,
  // OpenAI logs the caller's id under this header and quotes it in support cases.
  requestIdHeader: 'X-Client-Request-Id',
  ownedParams: new Set(['input_reference']),
  // The common `duration` means Sora's `seconds` here (spec 2.3 rule 3: accepted by every vendor).
  validate: (input) => validate(foldCommonDuration(input), secondsParamOf(input)),
  estimateSeconds: (input) => foldCommonDuration(input).std.seconds ?? SORA_DEFAULT_SECONDS,
  buildCreate: (input, up) => buildCreate(foldCommonDuration(input), up),
  parseCreate: (res, input) => parseCreate(res, foldCommonDuration(input)),
  buildPoll,
  parsePoll,
  buildContent,
  buildRemix,
  derive: soraDerivations,
  characters: soraCharacters,
  buildVariant,
  classifyError: (res) =>
    classifyOpenAiStyle(res, (env) => env.param === 'model' || env.code === 'model_not_found'),
};
