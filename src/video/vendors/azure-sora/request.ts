import { errors } from '../../../core/errors.js';
import { deepMerge, isObject, omit, type Json, type JsonObject } from '../../../core/json.js';
import type { Upstream } from '../../../http/types.js';
import type { CreateInput } from '../../types.js';
import { pickSize, readInt, stringOption } from '../../../protocols/openai/video-sizes.js';
import type { FilePart } from '../../../http/multipart.js';

/** Azure's default clip length when n_seconds is not sent. */
export const AZURE_DEFAULT_SECONDS = 5;
/** width and height are required by the jobs API; this is the size its quickstart uses. */
const FALLBACK_SIZE = { width: 480, height: 480 };
const MAX_SECONDS = 20;
const MAX_VARIANTS = 5;

export function apiVersion(up: Upstream): string {
  return stringOption(up.options, 'api_version') ?? 'preview';
}

/** `model` is the deployment name: options.deployments may map the public (or upstream) name to it. */
export function deploymentFor(input: { model: string; upstreamModel: string }, up: Upstream): string {
  const map = up.options.deployments;
  if (isObject(map)) {
    const hit = map[input.model] ?? map[input.upstreamModel];
    if (typeof hit === 'string' && hit !== '') return hit;
  }
  return input.upstreamModel;
}

function defaultSize(up: Upstream): { width: number; height: number } {
  const m = /^(\d+)\s*[x*]\s*(\d+)$/i.exec(stringOption(up.options, 'default_size') ?? '');
  return m ? { width: Number(m[1]), height: Number(m[2]) } : FALLBACK_SIZE;
}

/** A native integer field checked against its range; undefined when the client did not send it. */
function nativeInt(native: JsonObject, name: string, min: number, max: number): number | undefined {
  const raw = native[name];
  if (raw === undefined || raw === null) return undefined;
  const n = readInt(raw);
  if (n === undefined || n < min || n > max) {
    throw errors.invalidRequest(`${name} must be a whole number from ${min} to ${max}; got ${JSON.stringify(raw)}.`, name);
  }
  return n;
}

/** Lenient reads for the hold estimate, which must never throw. */
export function estimate(input: Omit<CreateInput, 'media'>): number {
  const seconds = readInt(input.native.n_seconds) ?? input.std.seconds ?? AZURE_DEFAULT_SECONDS;
  const variants = readInt(input.native.n_variants) ?? 1;
  // Every variant is a billed video, so the hold covers all of them.
  return seconds * Math.max(1, variants);
}

/**
 * Vendor-side 400s before the call. The ranges and the resolution coupling (1080p: at most 10 s
 * and one variant; 720p: at most two variants) are the documented limits of this preview API.
 */
/** `given`: the field the client gave the length in, when not `n_seconds` (`duration` stands in for `seconds`). */
export function validateAzure(input: CreateInput, given: 'seconds' | 'duration' = 'seconds'): void {
  const { std, native } = input;
  let seconds = nativeInt(native, 'n_seconds', 1, MAX_SECONDS);
  const secondsParam = seconds !== undefined ? 'n_seconds' : given;
  if (seconds === undefined && std.seconds !== undefined) {
    if (!Number.isInteger(std.seconds) || std.seconds < 1 || std.seconds > MAX_SECONDS) {
      throw errors.invalidRequest(`${given} must be a whole number from 1 to ${MAX_SECONDS} for ${input.model}; got ${std.seconds}.`, given);
    }
    seconds = std.seconds;
  }
  seconds ??= AZURE_DEFAULT_SECONDS;
  const variants = nativeInt(native, 'n_variants', 1, MAX_VARIANTS) ?? 1;
  const size = pickSize(std) ?? FALLBACK_SIZE;
  const width = nativeInt(native, 'width', 1, 16384) ?? size.width;
  const height = nativeInt(native, 'height', 1, 16384) ?? size.height;
  const short = Math.min(width, height);
  if (short >= 1080 && seconds > 10) {
    throw errors.invalidRequest(`At ${width}x${height} a video can be at most 10 seconds long.`, secondsParam);
  }
  if (short >= 1080 && variants > 1) throw errors.invalidRequest(`At ${width}x${height} only one variant can be generated.`, 'n_variants');
  if (short >= 720 && variants > 2) throw errors.invalidRequest(`At ${width}x${height} at most two variants can be generated.`, 'n_variants');

  if (std.frameImages.some((f) => f.frameType === 'last_frame')) {
    throw errors.invalidRequest(`${input.model} can pin only the first frame; last_frame is not supported.`, 'frame_images');
  }
  if (std.frameImages.length > 1) throw errors.invalidRequest('Only one first_frame image can be given.', 'frame_images');
  const items = native.inpaint_items;
  if (items !== undefined && !Array.isArray(items) && typeof items !== 'string') {
    throw errors.invalidRequest('inpaint_items must be an array of inpaint items.', 'inpaint_items');
  }
}

/** URLs whose bytes must be uploaded: native inpaint item urls, else the first frame. */
export function mediaUrls(input: Omit<CreateInput, 'media'>): string[] {
  const items = input.native.inpaint_items;
  if (Array.isArray(items)) return items.flatMap((it) => (isObject(it) && typeof it.url === 'string' ? [it.url] : []));
  if (items !== undefined) return [];
  const first = input.std.frameImages.find((f) => f.frameType === 'first_frame');
  const video = sourceVideo(input);
  return [...(first ? [first.url] : []), ...(video ? [video.url] : [])];
}

/** A video in input_references with role `source_video` (an uploaded video input_reference) is inpainted from, as Azure's `video` item. */
function sourceVideo(input: Omit<CreateInput, 'media'>): { url: string } | undefined {
  return input.std.inputReferences.find((r) => /video/i.test(r.type) && r.role === 'source_video');
}

const WHOLE_FRAME = { left_fraction: 0, top_fraction: 0, right_fraction: 1, bottom_fraction: 1 };

const EXTENSIONS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'video/mp4': 'mp4',
  'video/quicktime': 'mov',
  'video/webm': 'webm',
};

function upload(input: CreateInput, url: string, base: string, files: FilePart[], name?: string): string {
  const media = input.media.get(url);
  if (!media) throw errors.internal('The media to upload to azure-sora was not fetched.');
  const filename = name ?? `${base}.${EXTENSIONS[media.mimeType] ?? 'bin'}`;
  files.push({ field: 'files', filename, contentType: media.mimeType, data: Buffer.from(media.base64, 'base64') });
  return filename;
}

/**
 * The inpaint_items to send, collecting the files to upload. Native items replace the derived ones
 * whole; an item carrying `url` (a gateway convenience, since clients cannot upload through a JSON
 * API) has its bytes uploaded as a `files` part and the url swapped for the part's file_name.
 */
function inpaintItems(input: CreateInput, files: FilePart[]): Json | undefined {
  const items = input.native.inpaint_items;
  if (Array.isArray(items)) {
    return items.map((item, i) => {
      if (!isObject(item) || typeof item.url !== 'string') return item;
      const name = typeof item.file_name === 'string' && item.file_name !== '' ? item.file_name : undefined;
      return { ...omit(item, ['url']), file_name: upload(input, item.url, `inpaint_${i}`, files, name) };
    });
  }
  if (items !== undefined) return items;
  const derived: JsonObject[] = [];
  const first = input.std.frameImages.find((f) => f.frameType === 'first_frame');
  if (first) derived.push({ frame_index: 0, type: 'image', file_name: upload(input, first.url, 'first_frame', files), crop_bounds: WHOLE_FRAME });
  const video = sourceVideo(input);
  if (video) derived.push({ frame_index: 0, type: 'video', file_name: upload(input, video.url, 'source_video', files), crop_bounds: WHOLE_FRAME });
  return derived.length > 0 ? derived : undefined;
}

/** The create fields (native merged over derived) and the files that make it a multipart request. */
export function createFields(input: CreateInput, up: Upstream): { fields: JsonObject; files: FilePart[] } {
  const { std } = input;
  const size = pickSize(std) ?? defaultSize(up);
  const derived: JsonObject = {
    model: deploymentFor(input, up),
    prompt: std.prompt,
    width: size.width,
    height: size.height,
    n_seconds: std.seconds ?? AZURE_DEFAULT_SECONDS,
  };
  const fields = deepMerge(derived, omit(input.native, ['inpaint_items']));
  const files: FilePart[] = [];
  const items = inpaintItems(input, files);
  if (items !== undefined) fields.inpaint_items = items;
  return { fields, files };
}
