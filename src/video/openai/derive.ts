import type { Authorizer } from '../../auth/authorize.js';
import type { AuthContext } from '../../auth/types.js';
import { errors } from '../../core/errors.js';
import { isObject, type JsonObject } from '../../core/json.js';
import type { ModelInfo } from '../../routing/catalog.js';
import type { CreateControl } from '../create.js';
import { checkDerivable, type DeriveRequest } from '../derive.js';
import type { VideoService } from '../service.js';
import type { DeriveOp, VideoVendor } from '../types.js';
import { checkVideoUpload } from '../video-upload.js';
import { OPENAI_DEFAULT_MODEL } from './request.js';

/**
 * OpenAI's POST /videos/edits ({prompt, video}) and POST /videos/extensions ({prompt, seconds,
 * video}), as JSON or as the multipart form the SDKs send. `video` is an uploaded video file or
 * `{id}` of a completed video (`video[id]` in a form). `model` is the gateway's addition, for an
 * uploaded video only (default sora-2): an id's video is continued on its own model and upstream.
 */
const FIELDS: Record<DeriveOp, ReadonlySet<string>> = {
  edit: new Set(['prompt', 'video', 'model']),
  extend: new Set(['prompt', 'video', 'model', 'seconds']),
};

function readSeconds(v: unknown): number {
  if (v === undefined || v === null || v === '') throw errors.invalidRequest("Missing required parameter: 'seconds'.", 'seconds', 'missing_required_parameter');
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d{1,4}$/.test(v.trim()) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n <= 0) throw errors.invalidRequest("'seconds' must be a whole number of seconds, such as \"8\".", 'seconds');
  return n;
}

export async function deriveVideo(
  video: VideoService, authorizer: Authorizer, ctx: AuthContext, op: DeriveOp, form: { fields: JsonObject; file?: Buffer }, control: CreateControl,
): Promise<JsonObject> {
  const { fields, file } = form;
  const extra = Object.keys(fields).find((k) => !FIELDS[op].has(k));
  if (extra) throw errors.invalidRequest(`Unknown field '${extra.slice(0, 100)}': ${op === 'edit' ? 'an edit takes prompt and video' : 'an extension takes prompt, seconds and video'}.`, extra.slice(0, 100), 'unknown_parameter');
  const prompt = fields.prompt;
  if (typeof prompt !== 'string' || prompt.trim() === '') throw errors.invalidRequest("Missing required parameter: 'prompt'.", 'prompt', 'missing_required_parameter');
  const seconds = op === 'extend' ? readSeconds(fields.seconds) : undefined;
  if (fields.model !== undefined && typeof fields.model !== 'string') throw errors.invalidRequest("'model' must be a string.", 'model');
  const ref = fields.video;
  if (ref !== undefined && file) throw errors.invalidRequest("Send 'video' once: as a file or as {id}, not both.", 'video');
  if (ref === undefined && !file) throw errors.invalidRequest("Missing required parameter: 'video' (an uploaded video, or {id} of a completed video).", 'video', 'missing_required_parameter');

  const { deps } = video;
  let model: ModelInfo;
  let vendor: VideoVendor;
  let derive: DeriveRequest;
  let size: string | undefined;
  let uploadUpstreamModel: string | undefined;
  if (ref !== undefined) {
    if (!isObject(ref) || typeof ref.id !== 'string' || Object.keys(ref).length !== 1)
      throw errors.invalidRequest("'video' must be an uploaded video file or {id} of a completed video.", 'video');
    // Another account's id, a tampered one or a deleted job: 404; not completed: 400; no such operation: 400.
    const source = await video.deriveSource(ctx, ref.id, op);
    if (fields.model !== undefined && fields.model !== source.model)
      throw errors.invalidRequest(`A video is ${op === 'edit' ? 'edited' : 'extended'} by the model that made it (${source.model}); leave 'model' out.`, 'model');
    model = authorizer.model(ctx, 'video', source.model, 'video');
    vendor = deps.vendors.get(source.vendor)!;
    if (typeof source.request.size === 'string') size = source.request.size;
    derive = { op, prompt, source, sourceSeconds: source.seconds ?? source.estSeconds, seconds };
  } else {
    model = authorizer.model(ctx, 'video', fields.model ?? OPENAI_DEFAULT_MODEL, 'video');
    const first = deps.catalog.candidates(model.name, ctx.account)[0];
    if (!first) throw errors.upstreamUnavailable(`No video upstream is configured for '${model.name}'.`);
    vendor = checkDerivable(deps, model.name, first.vendor, op);
    uploadUpstreamModel = deps.catalog.upstreamModel(first, model.name);
    const checked = checkVideoUpload(file!, 'video', { maxBytes: deps.settings.uploadVideoMaxBytes, maxSeconds: deps.settings.uploadVideoMaxSeconds });
    // An edit is held and billed as long as its source: a length the gateway cannot read cannot be held.
    if (op === 'edit' && checked.seconds === undefined)
      throw errors.invalidRequest("An edit is billed by its source's length: send an MP4 or MOV (the gateway reads their length from the header).", 'video', 'invalid_media');
    if (checked.width !== undefined && checked.height !== undefined) size = `${checked.width}x${checked.height}`;
    // An extension bills the stitched total less the source's length, so a length that lowers the
    // bill must be the gateway's own: an upload's is whatever its file claims (a 2 s clip may say
    // 21.9 s, leaving 0.1 s of a 20 s segment to bill). Its segment is billed as asked instead.
    const sourceSeconds = op === 'edit' ? checked.seconds : undefined;
    derive = { op, prompt, file: { data: file!, mimeType: checked.mime, filename: `video.${checked.ext}` }, sourceSeconds, seconds };
  }
  vendor.derive?.validate?.(op, { model: model.name, prompt, sourceSeconds: derive.sourceSeconds, seconds, uploadUpstreamModel });
  const spec: JsonObject = { model: model.name, prompt, ...(size ? { size } : {}) };
  return video.create(ctx, model, spec, control, { dialect: 'openai', derive });
}

/**
 * OpenAI's POST /videos/characters: `name` (1-80 characters) and the file `video`; `model` (default
 * sora-2) picks the upstreams, as for a create. Checked here; made by video/characters.ts.
 */
export function readCharacter(video: VideoService, fields: JsonObject, file: Buffer | undefined): { name: string; model: unknown; video: { data: Buffer; mimeType: string; filename: string } } {
  const extra = Object.keys(fields).find((k) => k !== 'name' && k !== 'model');
  if (extra) throw errors.invalidRequest(`Unknown field '${extra.slice(0, 100)}': a character takes name and video.`, extra.slice(0, 100), 'unknown_parameter');
  const name = fields.name;
  if (typeof name !== 'string' || name.trim() === '') throw errors.invalidRequest("Missing required parameter: 'name'.", 'name', 'missing_required_parameter');
  if ([...name].length > 80) throw errors.invalidRequest("'name' may be at most 80 characters.", 'name');
  // A display name: control and line-separator characters only garble what shows it (logs, the
  // vendor's own pages), so they are refused rather than passed on.
  if (/[\p{Cc}\u2028\u2029]/u.test(name)) throw errors.invalidRequest("'name' may not hold control characters.", 'name');
  if (!file) throw errors.invalidRequest("Missing required parameter: 'video' (the video file the character is made from).", 'video', 'missing_required_parameter');
  const { settings } = video.deps;
  const checked = checkVideoUpload(file, 'video', { maxBytes: settings.uploadVideoMaxBytes, maxSeconds: settings.uploadVideoMaxSeconds });
  return { name, model: fields.model ?? OPENAI_DEFAULT_MODEL, video: { data: file, mimeType: checked.mime, filename: `character.${checked.ext}` } };
}
