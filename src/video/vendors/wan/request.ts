import { errors } from '../../../core/errors.js';
import { isObject, mergeInto, type Json, type JsonObject } from '../../../core/json.js';
import type { Upstream, UpstreamRequest } from '../../../http/types.js';
import type { CreateInput, StandardVideoRequest } from '../../types.js';
import { DEFAULT_SECONDS, ratiosAt, sizeFor, tierOfSize, wanModelInfo, type WanModelInfo } from './models.js';

/**
 * The media and template fields of DashScope's `input` that only Wan has: the adapter owns these names
 * (ownedParams) and places them in `input`.
 */
export const WAN_INPUT_FIELDS: readonly string[] = [
  'media',
  'template',
  'img_url',
  'first_frame_url',
  'last_frame_url',
  'audio_url',
  'reference_url',
  'reference_urls',
  'reference_video_urls',
  'reference_video_description',
  'head_frame',
  'tail_frame',
  'ref_images_url',
  'mask_image_url',
  'mask_video_url',
];

/**
 * Native names that DashScope reads from `input` rather than `parameters`. Clients write them at the
 * top level; placement is ours. Names ending in `_url`/`_urls` are media inputs on every Wan endpoint,
 * so they go to `input` too, which lets new media fields work without a code change. The extra names
 * here are also `input` fields but not Wan's alone (negative_prompt is common to many vendors).
 */
export const INPUT_NATIVES: ReadonlySet<string> = new Set([
  ...WAN_INPUT_FIELDS,
  'negative_prompt',
  'function',
  'extend_prompt',
  'mask_frame_id',
  'video_url',
]);

export function isInputNative(name: string): boolean {
  return INPUT_NATIVES.has(name) || name.endsWith('_url') || name.endsWith('_urls');
}

/** Reads a positive duration from a native value (numbers or numeric strings). */
export function positiveNumber(v: Json | undefined): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

export function validateWan(input: CreateInput): void {
  const { std, native } = input;
  const info = wanModelInfo(input.upstreamModel);
  // A shape with no documented size is refused here, before anything is held or stored.
  sizeParameters(std, info);
  if (std.seconds !== undefined && !Number.isInteger(std.seconds)) {
    throw errors.invalidRequest('Wan models take a whole number of seconds.', 'seconds');
  }
  for (const name of ['input', 'parameters'] as const) {
    if (native[name] !== undefined && !isObject(native[name])) {
      throw errors.invalidRequest(`'${name}' must be an object.`, name);
    }
  }
  const nestedMedia = isObject(native.input) ? native.input.media : undefined;
  if ((native.media !== undefined && !Array.isArray(native.media)) || (nestedMedia !== undefined && !Array.isArray(nestedMedia))) {
    throw errors.invalidRequest("'media' must be an array of {type, url} items.", 'media');
  }
  const firsts = std.frameImages.filter((f) => f.frameType === 'first_frame').length;
  const lasts = std.frameImages.filter((f) => f.frameType === 'last_frame').length;
  if (firsts > 1 || lasts > 1) {
    throw errors.invalidRequest('At most one first_frame and one last_frame may be given.', 'frame_images');
  }
  // A pinned frame is a hard constraint: dropping it silently would produce a different video.
  if (firsts > 0 && !info.frames.first) {
    throw errors.invalidRequest(
      `Model '${input.model}' does not take a first frame; use an image-to-video (i2v) or first/last-frame (kf2v) model.`,
      'frame_images',
    );
  }
  if (lasts > 0 && !info.frames.last) {
    throw errors.invalidRequest(
      `Model '${input.model}' does not take a last frame; use a first/last-frame model such as wan2.2-kf2v-flash.`,
      'frame_images',
    );
  }
}

export function estimateWanSeconds(input: Omit<CreateInput, 'media'>): number {
  const { native, std } = input;
  const nested = isObject(native.parameters) ? native.parameters.duration : undefined;
  return positiveNumber(native.duration) ?? positiveNumber(nested) ?? std.seconds ?? DEFAULT_SECONDS;
}

/** Frame inputs in the shape the model family reads. */
function frameInputs(std: StandardVideoRequest, info: WanModelInfo): { fields: JsonObject; media: Json[] } {
  const fields: JsonObject = {};
  const media: Json[] = [];
  for (const f of std.frameImages) {
    if (info.mediaProtocol) media.push({ type: f.frameType, url: f.url });
    else if (info.kind === 'kf2v') fields[f.frameType === 'first_frame' ? 'first_frame_url' : 'last_frame_url'] = f.url;
    else if (f.frameType === 'first_frame') fields.img_url = f.url;
  }
  return { fields, media };
}

/** Soft references, where the model has a place for them; elsewhere they are ignored, as the spec says. */
function referenceInputs(std: StandardVideoRequest, info: WanModelInfo): { fields: JsonObject; media: Json[] } {
  const fields: JsonObject = {};
  const media: Json[] = [];
  if (!info.takesReferences) return { fields, media };
  const visual = std.inputReferences.filter((r) => refKind(r.type, r.role) !== 'audio');
  if (info.mediaProtocol) {
    for (const r of visual) media.push({ type: refKind(r.type, r.role) === 'video' ? 'reference_video' : 'reference_image', url: r.url });
  } else if (visual.length > 0) {
    fields.reference_urls = visual.map((r) => r.url);
  }
  return { fields, media };
}

function refKind(type: string, role?: string): 'image' | 'video' | 'audio' {
  const t = `${type} ${role ?? ''}`.toLowerCase();
  if (t.includes('video')) return 'video';
  if (t.includes('audio') || t.includes('voice')) return 'audio';
  return 'image';
}

function ratioChoice(tier: number): string {
  const ratios = ratiosAt(tier);
  return ratios.length > 0 ? `; one of ${ratios.join(', ')}` : '';
}

/** Size knobs derived from the standard fields, in the form the family reads. */
function sizeParameters(std: StandardVideoRequest, info: WanModelInfo): JsonObject {
  const out: JsonObject = {};
  const tier = std.size ? tierOfSize(std.size.width, std.size.height) : std.resolution;
  if (info.usesTier) {
    if (tier !== undefined) out.resolution = `${tier}P`;
    // wan2.7 replaced pixel sizes with resolution + ratio, so a size's ratio must travel explicitly.
    if (info.mediaProtocol && std.aspectRatio) out.ratio = std.aspectRatio;
  } else {
    const size = std.size ?? (tier !== undefined || std.aspectRatio ? sizeFor(tier ?? 720, std.aspectRatio ?? '16:9') : undefined);
    // A ratio with no documented size at this tier would otherwise be dropped, and the default made and billed.
    if (!size && std.aspectRatio !== undefined)
      throw errors.invalidRequest(`aspect_ratio '${std.aspectRatio}' has no documented size at ${tier ?? 720}P for this model${ratioChoice(tier ?? 720)}.`, 'aspect_ratio');
    if (size) out.size = `${size.width}*${size.height}`;
    else if (tier !== undefined) out.resolution = `${tier}P`;
  }
  // `parameters.ratio` is documented only for the wan2.7 ("new protocol") models; wan2.1-2.6 express
  // shape through `size` or a tier alone, so the ratio they were asked for is already in the size above
  // (Model Studio "Wan - text-to-video API reference" / "image-to-video API reference", parameters).
  return out;
}

/**
 * The DashScope create body: `{model, input, parameters}`. Derived values first, then the client's
 * natives merged over them (native names win, objects merge recursively), except `media[]`, which is
 * appended to what frame_images produced.
 */
export function buildWanBody(input: CreateInput): JsonObject {
  const { std, native } = input;
  const info = wanModelInfo(input.upstreamModel);
  const frames = frameInputs(std, info);
  const refs = referenceInputs(std, info);

  // Both objects are this function's own, so the natives are merged into them in place: a copy of
  // the whole object per top-level field made a body of many fields quadratic (seconds of event loop).
  const inputPart: JsonObject = {};
  if (std.prompt) inputPart.prompt = std.prompt;
  Object.assign(inputPart, frames.fields, refs.fields);
  const parameters: JsonObject = sizeParameters(std, info);
  if (std.seconds !== undefined) parameters.duration = std.seconds;

  // Appended with concat, not push(...items): spreading a client's array into the arguments of a
  // call overflows the stack past about 100k items (a RangeError, answered as a 500).
  let media: Json[] = [...frames.media, ...refs.media];
  // Nested objects first, then top-level names, so a name written at the top level has the last word.
  if (isObject(native.input)) {
    const { media: nestedMedia, ...rest } = native.input;
    if (Array.isArray(nestedMedia)) media = media.concat(nestedMedia);
    mergeInto(inputPart, rest);
  }
  if (isObject(native.parameters)) mergeInto(parameters, native.parameters);
  for (const [key, value] of Object.entries(native)) {
    if (key === 'input' || key === 'parameters') continue;
    if (key === 'media') {
      if (Array.isArray(value)) media = media.concat(value);
      continue;
    }
    mergeInto(isInputNative(key) ? inputPart : parameters, { [key]: value });
  }
  if (media.length > 0) inputPart.media = media;
  return { model: input.upstreamModel, input: inputPart, parameters };
}

export function authHeaders(up: Upstream): Record<string, string> {
  const h: Record<string, string> = {};
  if (up.apiKey) h.authorization = `Bearer ${up.apiKey}`;
  const workspace = up.options.workspace;
  if (typeof workspace === 'string' && workspace) h['x-dashscope-workspace'] = workspace;
  return h;
}

function mentionsOss(v: Json): boolean {
  if (typeof v === 'string') return v.startsWith('oss://');
  if (Array.isArray(v)) return v.some(mentionsOss);
  if (isObject(v)) return Object.values(v).some(mentionsOss);
  return false;
}

export function buildWanCreate(input: CreateInput, up: Upstream): UpstreamRequest {
  const body = buildWanBody(input);
  const headers: Record<string, string> = {
    ...authHeaders(up),
    'content-type': 'application/json',
    // Mandatory: without it DashScope refuses with "current user api does not support synchronous calls".
    'x-dashscope-async': 'enable',
  };
  // oss:// URLs (DashScope temporary uploads) are only resolved when this header is present.
  if (up.options.oss_resource_resolve === true || mentionsOss(body.input as Json)) {
    headers['x-dashscope-ossresourceresolve'] = 'enable';
  }
  return { method: 'POST', url: `${up.baseUrl}${wanModelInfo(input.upstreamModel).path}`, headers, body };
}
