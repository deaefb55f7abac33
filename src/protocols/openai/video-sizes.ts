import { errors } from '../../core/errors.js';
import type { Json, JsonObject } from '../../core/json.js';

/** "16:9" -> [16, 9]; words such as "adaptive" or "auto" give undefined. */
export function parseRatio(ratio: string | undefined): [number, number] | undefined {
  const m = ratio ? /^\s*(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)\s*$/.exec(ratio) : null;
  if (!m) return undefined;
  const w = Number(m[1]);
  const h = Number(m[2]);
  return w > 0 && h > 0 ? [w, h] : undefined;
}

/** Video encoders want even dimensions; 480 * 16/9 = 853.3 becomes 854, the size Sora lists. */
function even(n: number): number {
  return Math.max(2, Math.round(n / 2) * 2);
}

/** Aspect words that ask for the vendor's own choice of shape. */
const LEFT_TO_VENDOR = new Set(['auto', 'adaptive']);

/** The size-expressing standard fields (a structural slice of the video request). */
export interface SizeFields {
  size?: { width: number; height: number };
  resolution?: number;
  aspectRatio?: string;
}

/**
 * The width x height a Sora request should ask for. `size` (or what the core derived from
 * resolution + aspect_ratio) is used as it is. When the client sent only one half, the other is
 * filled in: the resolution is the short side (default 720p) and the ratio defaults to 16:9, so
 * `aspect_ratio: "9:16"` alone becomes 720x1280 and `resolution: "1080p"` alone 1920x1080.
 * Nothing sent gives undefined, which leaves the vendor's own default in charge.
 */
export function pickSize(std: SizeFields): { width: number; height: number } | undefined {
  if (std.size) return std.size;
  const ratio = parseRatio(std.aspectRatio);
  // `auto` / `adaptive` leave the shape to the vendor; any other word names no size, and left out the
  // vendor's default would be made and billed as if asked for.
  if (std.aspectRatio !== undefined && !ratio && !LEFT_TO_VENDOR.has(std.aspectRatio.toLowerCase()))
    throw errors.invalidRequest(`'aspect_ratio' must be '<w>:<h>' for this model (e.g. '16:9'); '${std.aspectRatio}' names no size.`, 'aspect_ratio');
  if (!ratio && std.resolution === undefined) return undefined;
  const [rw, rh] = ratio ?? [16, 9];
  const short = std.resolution ?? 720;
  return rw >= rh
    ? { width: even((short * rw) / rh), height: short }
    : { width: short, height: even((short * rh) / rw) };
}

/** A whole number given as a JSON number or a numeric string (multipart clients send strings). */
export function readInt(v: Json | undefined): number | undefined {
  if (typeof v === 'number') return Number.isInteger(v) ? v : undefined;
  if (typeof v === 'string' && /^\s*-?\d+\s*$/.test(v)) return Number(v);
  return undefined;
}

/** A finite number from a JSON number or numeric string, else undefined. */
export function readNumber(v: Json | undefined): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return undefined;
}

/** A string option from `up.options`, ignoring blanks and other types. */
export function stringOption(options: JsonObject, key: string): string | undefined {
  const v = options[key];
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}
