import { errors } from '../../../core/errors.js';
import { deepMerge, isObject, type Json, type JsonObject } from '../../../core/json.js';
import type { CreateInput, StandardVideoRequest } from '../../types.js';
import { mediaUrls, referenceImageUrls, toReferenceImage, toVertexMedia, type MediaResolver } from './media.js';
import { alias, DEFAULT_DURATION_SECONDS, INSTANCE_ALIASES, isVeo2, PARAMETER_ALIASES } from './names.js';

/**
 * Translation of a gateway request into the Vertex `predictLongRunning` body:
 * `{instances: [{prompt, image, lastFrame, video, mask, referenceImages, ...}], parameters: {...}, labels?}`.
 * Standard fields are derived first; natives are merged over them (native names win, camelCase over
 * its snake_case alias, a nested native `parameters` object last, merged recursively).
 */
type Input = Omit<CreateInput, 'media'>;

export interface ParameterDefaults {
  storageUri?: string;
  generateAudio?: boolean;
}

/** Natives sorted by destination, each remembering the name the client used (for 400 params). */
interface SplitNatives {
  parameters: JsonObject;
  paramSource: Record<string, string>;
  instance: JsonObject;
  instanceSource: Record<string, string>;
  nestedParameters?: JsonObject;
  instances?: JsonObject[];
  labels?: Json;
}

/** Generic names first, so that a specific alias (duration_seconds) beats a generic one (duration). */
const GENERIC_ALIASES = new Set(['duration', 'n']);

function splitNatives(native: JsonObject): SplitNatives {
  const out: SplitNatives = { parameters: {}, paramSource: {}, instance: {}, instanceSource: {} };
  const keys = Object.keys(native);
  const rank = (k: string) => (GENERIC_ALIASES.has(k) ? 0 : alias(PARAMETER_ALIASES, k) || isSnakeInstance(k) ? 1 : 2);
  for (const key of [...keys].sort((a, b) => rank(a) - rank(b))) {
    const value = native[key]!;
    const instanceTarget = alias(INSTANCE_ALIASES, key);
    if (instanceTarget) {
      out.instance[instanceTarget] = value;
      out.instanceSource[instanceTarget] = key;
    } else if (key === 'parameters') {
      if (!isObject(value)) throw errors.invalidRequest("'parameters' must be an object.", 'parameters');
      out.nestedParameters = value;
    } else if (key === 'instances') {
      if (!Array.isArray(value) || !value.every(isObject))
        throw errors.invalidRequest("'instances' must be an array of objects.", 'instances');
      out.instances = value as JsonObject[];
    } else if (key === 'labels') {
      out.labels = value;
    } else {
      const target = alias(PARAMETER_ALIASES, key) ?? key;
      out.parameters[target] = value;
      out.paramSource[target] = key;
    }
  }
  if (out.nestedParameters) {
    for (const k of Object.keys(out.nestedParameters)) out.paramSource[k] = `parameters.${k}`;
  }
  return out;
}

function isSnakeInstance(key: string): boolean {
  const target = alias(INSTANCE_ALIASES, key);
  return target !== undefined && target !== key;
}

/** The `parameters` object: derived from standard fields, natives merged over it. */
export function buildParameters(input: Input, defaults: ParameterDefaults = {}): { parameters: JsonObject; source: Record<string, string> } {
  const { std, upstreamModel } = input;
  const derived: JsonObject = {};
  if (std.seconds !== undefined) derived['durationSeconds'] = std.seconds;
  if (std.aspectRatio && /^\d+:\d+$/.test(std.aspectRatio)) derived['aspectRatio'] = std.aspectRatio;
  const resolution = resolutionLabel(std, upstreamModel);
  if (resolution) derived['resolution'] = resolution;
  if (!isVeo2(upstreamModel)) derived['generateAudio'] = defaults.generateAudio ?? true;
  if (defaults.storageUri) derived['storageUri'] = defaults.storageUri;

  const split = splitNatives(input.native);
  let parameters = deepMerge(derived, split.parameters);
  if (split.nestedParameters) parameters = deepMerge(parameters, split.nestedParameters);
  for (const k of ['durationSeconds', 'sampleCount']) {
    const v = parameters[k];
    if (typeof v === 'string' && /^\s*\d+\s*$/.test(v)) parameters[k] = Number(v);
  }
  const source: Record<string, string> = { ...split.paramSource };
  if (std.seconds !== undefined && !source['durationSeconds']) source['durationSeconds'] = 'seconds';
  return { parameters, source };
}

/**
 * Vertex names resolutions by the short side ("720p" for both 1280x720 and 720x1280), so a size is
 * read as min(width, height); 2160 is Vertex's "4k". veo-2 renders 720p only and rejects the field.
 */
function resolutionLabel(std: StandardVideoRequest, model: string): string | undefined {
  if (!std.sent.size && !std.sent.resolution) return undefined;
  const short = std.sent.size && std.size ? Math.min(std.size.width, std.size.height) : std.resolution;
  if (short === undefined) return undefined;
  if (isVeo2(model) && short === 720) return undefined;
  return short >= 2160 ? '4k' : `${short}p`;
}

/** The single instance: prompt, frames and the instance-level natives. */
export function buildInstances(input: Input, resolve: MediaResolver): JsonObject[] {
  const { std } = input;
  const split = splitNatives(input.native);
  const inst: JsonObject = {};
  if (std.prompt) inst['prompt'] = std.prompt;

  const first = std.frameImages.filter((f) => f.frameType === 'first_frame');
  const last = std.frameImages.filter((f) => f.frameType === 'last_frame');
  if (first.length > 1 || last.length > 1)
    throw errors.invalidRequest('frame_images may hold at most one first_frame and one last_frame.', 'frame_images');
  if (first[0]) inst['image'] = toVertexMedia(first[0].url, 'frame_images', 'image', resolve);
  if (last[0]) inst['lastFrame'] = toVertexMedia(last[0].url, 'frame_images', 'image', resolve);

  // A media value is a union (bytes or gcsUri): a native one replaces the derived one whole.
  const n = split.instance;
  const src = (k: string) => split.instanceSource[k] ?? k;
  if (n['image'] !== undefined) inst['image'] = toVertexMedia(n['image'], src('image'), 'image', resolve);
  if (n['lastFrame'] !== undefined) inst['lastFrame'] = toVertexMedia(n['lastFrame'], src('lastFrame'), 'image', resolve);
  if (n['video'] !== undefined) inst['video'] = toVertexMedia(n['video'], src('video'), 'video', resolve);
  else {
    const video = extendedVideo(input);
    if (video) inst['video'] = toVertexMedia(video.url, 'input_references', 'video', resolve);
  }
  if (n['mask'] !== undefined) inst['mask'] = toVertexMedia(n['mask'], src('mask'), 'image', resolve);
  if (n['maskMode'] !== undefined) {
    const mask = inst['mask'];
    if (!isObject(mask)) throw errors.invalidRequest(`'${src('maskMode')}' needs a 'mask'.`, src('maskMode'));
    mask['maskMode'] = n['maskMode'];
  }
  if (n['referenceImages'] !== undefined) {
    const refs = n['referenceImages'];
    const param = src('referenceImages');
    if (!Array.isArray(refs)) throw errors.invalidRequest(`'${param}' must be an array.`, param);
    inst['referenceImages'] = refs.map((r, i) => toReferenceImage(r, `${param}[${i}]`, resolve));
  } else if (usesInputReferences(input)) {
    inst['referenceImages'] = imageReferences(std).map((r) => ({
      image: toVertexMedia(r.url, 'input_references', 'image', resolve),
      referenceType: r.role && /style/i.test(r.role) ? 'style' : 'asset',
    }));
  }
  if (n['cameraControl'] !== undefined) inst['cameraControl'] = n['cameraControl'];

  if (inst['lastFrame'] !== undefined && inst['image'] === undefined) {
    const param = last[0] && n['lastFrame'] === undefined ? 'frame_images' : src('lastFrame');
    throw errors.invalidRequest('A last frame needs a first frame (Vertex: lastFrame requires image).', param);
  }

  if (!split.instances) return [inst];
  const [head, ...rest] = split.instances;
  return [deepMerge(inst, head ?? {}), ...rest];
}

/** Models that extend a given video (instances[].video); the others ignore a video reference. */
export function extendsVideo(model: string): boolean {
  return isVeo2(model) || /^veo-3\.1/.test(model);
}

/**
 * A video in input_references with role `source_video` (an uploaded video input_reference arrives
 * so) becomes the video Veo extends, on the models that extend one, unless the native `video` says
 * otherwise. Other video references stay soft guidance, which Veo ignores.
 */
function extendedVideo(input: Input): { url: string } | undefined {
  if (!extendsVideo(input.upstreamModel) && !extendsVideo(input.model)) return undefined;
  if (splitNatives(input.native).instance['video'] !== undefined) return undefined;
  return input.std.inputReferences.find((r) => /video/i.test(r.type) && r.role === 'source_video');
}

/**
 * input_references are soft guidance: image references become Veo asset/style reference images,
 * but only when nothing else pins the instance (Vertex rejects referenceImages next to image,
 * lastFrame or video), and other kinds are ignored, as the spec allows.
 */
function usesInputReferences(input: Input): boolean {
  const n = splitNatives(input.native).instance;
  if (input.std.frameImages.length > 0) return false;
  if (n['image'] !== undefined || n['lastFrame'] !== undefined || n['video'] !== undefined) return false;
  if (extendedVideo(input)) return false;
  return imageReferences(input.std).length > 0;
}

function imageReferences(std: StandardVideoRequest) {
  return std.inputReferences.filter((r) => /image/i.test(r.type));
}

/** Every http(s) URL buildInstances will ask the resolver for. */
export function urlsToFetch(input: Input): string[] {
  const urls: string[] = input.std.frameImages.map((f) => f.url).filter((u) => /^https?:\/\//i.test(u));
  const n = splitNatives(input.native).instance;
  for (const k of ['image', 'lastFrame', 'video', 'mask']) if (n[k] !== undefined) urls.push(...mediaUrls(n[k]));
  const video = extendedVideo(input);
  if (video && /^https?:\/\//i.test(video.url)) urls.push(video.url);
  const refs = n['referenceImages'];
  if (Array.isArray(refs)) for (const r of refs) urls.push(...referenceImageUrls(r));
  else if (refs === undefined && usesInputReferences(input))
    urls.push(...imageReferences(input.std).map((r) => r.url).filter((u) => /^https?:\/\//i.test(u)));
  return [...new Set(urls)];
}

/** The whole request body. */
export function buildBody(input: Input, resolve: MediaResolver, defaults: ParameterDefaults): JsonObject {
  const body: JsonObject = {
    instances: buildInstances(input, resolve),
    parameters: buildParameters(input, defaults).parameters,
  };
  const labels = splitNatives(input.native).labels;
  if (labels !== undefined) body['labels'] = labels;
  return body;
}

/** Requested seconds per video and the number of videos, as the upstream will see them. */
export function requestedOutput(input: Input): { durationSeconds: number; sampleCount: number } {
  const { parameters } = buildParameters(input);
  const d = parameters['durationSeconds'];
  const s = parameters['sampleCount'];
  return {
    durationSeconds: typeof d === 'number' && d > 0 ? d : DEFAULT_DURATION_SECONDS,
    sampleCount: typeof s === 'number' && Number.isInteger(s) && s >= 1 ? s : 1,
  };
}

/** Vendor-specific 400s; media shapes are checked with a resolver that accepts every URL. */
export function validateRequest(input: Input): void {
  const { parameters, source } = buildParameters(input);
  const d = parameters['durationSeconds'];
  if (d !== undefined && !(typeof d === 'number' && Number.isInteger(d) && d > 0))
    throw errors.invalidRequest(
      'Veo takes durationSeconds as a positive whole number of seconds.',
      source['durationSeconds'] ?? 'durationSeconds',
    );
  const s = parameters['sampleCount'];
  if (s !== undefined && !(typeof s === 'number' && Number.isInteger(s) && s >= 1 && s <= 4))
    throw errors.invalidRequest('sampleCount must be an integer from 1 to 4.', source['sampleCount'] ?? 'sampleCount');
  buildInstances(input, () => ({ base64: '', mimeType: 'image/png' }));
}
