import { errors } from '../../../core/errors.js';
import { isObject, type JsonObject } from '../../../core/json.js';
import { encodeMultipart } from '../../../http/multipart.js';
import type { Upstream, UpstreamRequest, UpstreamResponse } from '../../../http/types.js';
import { reportedSeconds } from '../../duration.js';
import type { CreatedTask, DeriveInput, DeriveOp, VideoDerivations } from '../../types.js';
import { authHeaders, videoExt } from './http.js';

/**
 * `POST /videos/extensions` takes `seconds` "4" to "20" in steps of 4 (openai-node's
 * VideoExtendParams: "allowed values: 4, 8, 12, 16, 20"), the length of the new segment only.
 */
export const SORA_EXTEND_SECONDS: readonly number[] = [4, 8, 12, 16, 20];

const PATHS: Record<DeriveOp, string> = { edit: 'edits', extend: 'extensions' };

/**
 * The model that edits or extends an uploaded video: the bodies (CreateVideoEditMultipartBody,
 * CreateVideoExtendMultipartBody) name none, so the API's default for videos, `sora-2`, runs it.
 */
const UPLOAD_MODEL = /^sora-2(-\d{4}-\d{2}-\d{2})?$/;

function validate(op: DeriveOp, input: { seconds?: number; model: string; uploadUpstreamModel?: string }): void {
  // Held and billed at the named model's price, a model the vendor would not run is refused.
  if (input.uploadUpstreamModel !== undefined && !UPLOAD_MODEL.test(input.uploadUpstreamModel))
    throw errors.invalidRequest(
      `An uploaded video is ${op === 'edit' ? 'edited' : 'extended'} by the vendor's default model (sora-2), which '${input.model}' is not; name a model served as sora-2, or edit a finished video by its id.`,
      'model',
    );
  if (op === 'extend' && (input.seconds === undefined || !SORA_EXTEND_SECONDS.includes(input.seconds)))
    throw errors.invalidRequest(`seconds must be one of ${SORA_EXTEND_SECONDS.join(', ')} for an extension; got ${String(input.seconds)}.`, 'seconds');
}

/**
 * A finished task is named by its id in a JSON body (the API's CreateVideoEditJsonBody and
 * CreateVideoExtendJsonBody: `video: {id}`); an uploaded video travels as the multipart file `video`.
 * The body names no model: the vendor continues the source's.
 */
function build(op: DeriveOp, input: DeriveInput, up: Upstream): UpstreamRequest {
  const url = `${up.baseUrl}/v1/videos/${PATHS[op]}`;
  const fields: JsonObject = { prompt: input.prompt };
  if (op === 'extend') fields.seconds = String(input.seconds);
  if ('task' in input.source) {
    return { method: 'POST', url, headers: { ...authHeaders(up), 'Content-Type': 'application/json' }, body: { ...fields, video: { id: input.source.task.taskId } } };
  }
  const { file } = input.source;
  // The client's file name stays with the client: the vendor gets a neutral one.
  const { body, contentType } = encodeMultipart(fields, [{ field: 'video', filename: `video.${videoExt(file.mimeType)}`, contentType: file.mimeType, data: file.data }]);
  return { method: 'POST', url, headers: { ...authHeaders(up), 'Content-Type': contentType }, body };
}

function parse(op: DeriveOp, res: UpstreamResponse, input: DeriveInput): CreatedTask {
  const v = res.json;
  if (!isObject(v) || typeof v.id !== 'string' || v.id === '') throw errors.upstreamError('sora (OpenAI) accepted the job but its answer carried no video id.');
  // `seconds` is the poll's fallback length: an edit's is its source's, an extension's its new segment.
  const meta: JsonObject = { op, seconds: (op === 'extend' ? input.seconds : input.sourceSeconds) ?? null };
  if (op === 'extend' && input.sourceSeconds !== undefined) meta.source_seconds = input.sourceSeconds;
  // A video object, kept whole as a poll's is.
  return { taskId: v.id, meta, vendorData: { ...v } };
}

export const soraDerivations: VideoDerivations = {
  validate,
  edit: (input, up) => build('edit', input, up),
  extend: (input, up) => build('extend', input, up),
  parse: (op, res, input) => parse(op, res, input),
};

/**
 * A finished extension's lengths. Its video object's `seconds` is the stitched total (openai-node:
 * "For extensions, this is the stitched total duration"); the new segment, which is what is billed,
 * is that total less the source's length where the gateway knew it, else the segment asked for
 * (at most the total: no segment is longer than the video it is part of).
 */
export function extensionSeconds(reported: unknown, meta: JsonObject): { seconds: number; billableSeconds: number; sourceSeconds: number } {
  const asked = reportedSeconds(meta.seconds) ?? SORA_EXTEND_SECONDS[0]!;
  const source = reportedSeconds(meta.source_seconds);
  const total = reportedSeconds(reported);
  if (total === undefined) return { seconds: asked + (source ?? 0), billableSeconds: asked, sourceSeconds: source ?? 0 };
  if (source !== undefined && total > source) return { seconds: total, billableSeconds: total - source, sourceSeconds: source };
  // A total no longer than the source (or no source length) says nothing of the segment: the asked
  // length, but never more than the whole video the vendor reports.
  return { seconds: total, billableSeconds: Math.min(asked, total), sourceSeconds: Math.max(0, total - asked) };
}
