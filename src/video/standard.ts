import { errors } from '../core/errors.js';
import { isObject, type JsonObject } from '../core/json.js';
import type { FrameImage, InputReference, StandardVideoRequest } from './types.js';

/** The standard cross-vendor fields of spec 2.2; everything else in the body is native. */
export const STANDARD_FIELDS: ReadonlySet<string> = new Set([
  'model', 'prompt', 'seconds', 'size', 'resolution', 'aspect_ratio', 'ratio', 'frame_images', 'input_references',
]);

const MAX_SECONDS = 600;
const MAX_PROMPT = 32_000;
const MAX_DIMENSION = 8192;

/** Splits a create body into validated standard fields and the untouched native remainder. */
export function parseStandard(body: JsonObject): { std: StandardVideoRequest; native: JsonObject } {
  const native: JsonObject = {};
  for (const k of Object.keys(body)) if (!STANDARD_FIELDS.has(k)) native[k] = body[k];

  const model = body.model;
  if (typeof model !== 'string' || !model) throw errors.invalidRequest("'model' is required and must be a string.", 'model', 'missing_required_parameter');
  const prompt = body.prompt;
  if (prompt === undefined || prompt === null) throw errors.invalidRequest("'prompt' is required.", 'prompt', 'missing_required_parameter');
  if (typeof prompt !== 'string') throw errors.invalidRequest("'prompt' must be a string.", 'prompt');
  if (prompt.trim() === '') throw errors.invalidRequest("'prompt' must not be empty.", 'prompt');
  if (prompt.length > MAX_PROMPT) throw errors.invalidRequest(`'prompt' is longer than ${MAX_PROMPT} characters.`, 'prompt');

  const std: StandardVideoRequest = {
    model,
    prompt,
    frameImages: parseFrameImages(body.frame_images),
    inputReferences: parseInputReferences(body.input_references),
    sent: { size: body.size !== undefined, resolution: body.resolution !== undefined, aspectRatio: false },
  };
  if (body.seconds !== undefined) std.seconds = parseSeconds(body.seconds);

  const size = body.size !== undefined ? parseSize(body.size) : undefined;
  const resolution = body.resolution !== undefined ? parseResolution(body.resolution) : undefined;
  const aspect = parseAspect(body.aspect_ratio, body.ratio);
  std.sent.aspectRatio = aspect !== undefined;
  applySizeRules(std, size, resolution, aspect);
  return { std, native };
}

function parseSeconds(v: unknown): number {
  const n = typeof v === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0 || n > MAX_SECONDS)
    throw errors.invalidRequest(`'seconds' must be a number of seconds between 0 and ${MAX_SECONDS}.`, 'seconds');
  return n;
}

function parseSize(v: unknown): { width: number; height: number } {
  const m = typeof v === 'string' ? /^\s*(\d{1,5})\s*[x*X]\s*(\d{1,5})\s*$/.exec(v) : null;
  if (!m) throw errors.invalidRequest("'size' must look like '<width>x<height>', e.g. '1280x720'.", 'size');
  const width = Number(m[1]);
  const height = Number(m[2]);
  if (width < 1 || height < 1 || width > MAX_DIMENSION || height > MAX_DIMENSION)
    throw errors.invalidRequest(`'size' dimensions must be between 1 and ${MAX_DIMENSION}.`, 'size');
  return { width, height };
}

function parseResolution(v: unknown): number {
  const m = typeof v === 'string' ? /^\s*(\d{3,4})[pP]\s*$/.exec(v) : null;
  if (!m) throw errors.invalidRequest("'resolution' must look like '<height>p', e.g. '720p'.", 'resolution');
  return Number(m[1]);
}

/** `aspect_ratio` and its alias `ratio`: "16:9", or a vendor word such as "adaptive". */
function parseAspect(a: unknown, r: unknown): string | undefined {
  const check = (v: unknown, param: string): string | undefined => {
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || !/^(\d{1,3}:\d{1,3}|[a-z_]{2,20})$/.test(v.trim()))
      throw errors.invalidRequest(`'${param}' must look like '<w>:<h>', e.g. '16:9'.`, param);
    if (/^\d/.test(v.trim()) && !ratioParts(v.trim()))
      throw errors.invalidRequest(`'${param}' must have both sides above zero, e.g. '16:9'.`, param);
    return v.trim();
  };
  const av = check(a, 'aspect_ratio');
  const rv = check(r, 'ratio');
  if (av !== undefined && rv !== undefined && av !== rv)
    throw errors.sizeConflict(`'aspect_ratio' (${av}) and its alias 'ratio' (${rv}) disagree.`, 'ratio');
  return av ?? rv;
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

export function reduceRatio(w: number, h: number): string {
  const g = gcd(w, h);
  return `${w / g}:${h / g}`;
}

function ratioParts(aspect: string): [number, number] | undefined {
  const m = /^(\d+):(\d+)$/.exec(aspect);
  return m && Number(m[1]) > 0 && Number(m[2]) > 0 ? [Number(m[1]), Number(m[2])] : undefined;
}

const even = (n: number) => Math.round(n / 2) * 2;

/**
 * Size rules (spec 2.2): `size` alone, or `resolution` + `aspect_ratio`, each express the size.
 * When both forms are sent they must agree: the resolution is the short side of the size and the
 * aspect ratio is the size's reduced ratio. Whatever was sent, the other forms are derived.
 */
function applySizeRules(
  std: StandardVideoRequest,
  size: { width: number; height: number } | undefined,
  resolution: number | undefined,
  aspect: string | undefined,
): void {
  const parts = aspect !== undefined ? ratioParts(aspect) : undefined;
  if (size) {
    const shortSide = Math.min(size.width, size.height);
    if (resolution !== undefined && resolution !== shortSide)
      throw errors.sizeConflict(`'size' ${size.width}x${size.height} conflicts with 'resolution' ${resolution}p.`, 'resolution');
    if (parts && reduceRatio(parts[0], parts[1]) !== reduceRatio(size.width, size.height))
      throw errors.sizeConflict(`'size' ${size.width}x${size.height} conflicts with 'aspect_ratio' ${aspect}.`, 'aspect_ratio');
    std.size = size;
    std.resolution = shortSide;
    std.aspectRatio = aspect !== undefined && !parts ? aspect : reduceRatio(size.width, size.height);
    return;
  }
  if (resolution !== undefined) std.resolution = resolution;
  if (aspect !== undefined) std.aspectRatio = parts ? reduceRatio(parts[0], parts[1]) : aspect;
  if (resolution !== undefined && parts) {
    const [a, b] = parts;
    std.size = a >= b ? { width: even((resolution * a) / b), height: resolution } : { width: resolution, height: even((resolution * b) / a) };
  }
}

function isUrlLike(v: unknown): v is string {
  return typeof v === 'string' && v.length <= 20_000_000 && /^(https?:\/\/|data:|gs:\/\/|oss:\/\/)/i.test(v);
}

function parseFrameImages(v: unknown): FrameImage[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw errors.invalidRequest("'frame_images' must be an array.", 'frame_images');
  if (v.length > 2) throw errors.invalidRequest("'frame_images' holds at most a first and a last frame.", 'frame_images');
  const seen = new Set<string>();
  return v.map((item, i) => {
    const p = `frame_images[${i}]`;
    if (!isObject(item)) throw errors.invalidRequest(`'${p}' must be an object.`, p);
    if (!isUrlLike(item.image_url)) throw errors.invalidRequest(`'${p}.image_url' must be an http(s), data: or gs:// URL.`, `${p}.image_url`);
    const ft = item.frame_type ?? 'first_frame';
    if (ft !== 'first_frame' && ft !== 'last_frame')
      throw errors.invalidRequest(`'${p}.frame_type' must be first_frame or last_frame.`, `${p}.frame_type`);
    if (seen.has(ft)) throw errors.invalidRequest(`'frame_images' has two ${ft} items.`, `${p}.frame_type`);
    seen.add(ft);
    return { url: item.image_url, frameType: ft };
  });
}

function parseInputReferences(v: unknown): InputReference[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw errors.invalidRequest("'input_references' must be an array.", 'input_references');
  if (v.length > 16) throw errors.invalidRequest("'input_references' holds at most 16 items.", 'input_references');
  return v.map((item, i) => {
    const p = `input_references[${i}]`;
    if (!isObject(item)) throw errors.invalidRequest(`'${p}' must be an object.`, p);
    if (!isUrlLike(item.url)) throw errors.invalidRequest(`'${p}.url' must be an http(s), data: or gs:// URL.`, `${p}.url`);
    const type = item.type ?? 'image';
    if (typeof type !== 'string') throw errors.invalidRequest(`'${p}.type' must be a string.`, `${p}.type`);
    if (item.role !== undefined && typeof item.role !== 'string') throw errors.invalidRequest(`'${p}.role' must be a string.`, `${p}.role`);
    return { type, url: item.url, ...(typeof item.role === 'string' ? { role: item.role } : {}) };
  });
}
