import { isObject, type Json } from '../../../core/json.js';
import { vendorNumber } from '../../../core/lossless-json.js';

/**
 * fal hosts many model families behind one queue protocol, and each family spells `duration`
 * its own way. This table is the single place that knows those spellings; the adapter and the
 * simulator both read it.
 *
 * - suffix_s: a string with an "s" suffix ("8s")          e.g. Veo 3 / 3.1, Luma Ray 2
 * - string:   the number of seconds as a string ("5")      e.g. Kling v1-v3, O3, most others
 * - integer:  a JSON integer (5)                           e.g. Kling v4
 */
export type DurationFormat = 'suffix_s' | 'string' | 'integer';

export interface Family {
  id: string;
  format: DurationFormat;
  /** Seconds the family accepts; `seconds` outside this set is a 400 before anything is sent. */
  allowed?: readonly number[];
  /** What the model generates when no duration is sent (used for the hold and as a last resort). */
  defaultSeconds: number;
  /** Body field names for the first and last frame images. */
  frames: { first: string; last: string };
  /** Whether the family takes a `resolution` field ("720p"). */
  resolution: boolean;
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

interface Row {
  match: RegExp;
  family: Family;
}

/** First match wins; the generic row at the end matches everything. */
const ROWS: readonly Row[] = [
  {
    match: /^fal-ai\/veo3(\.\d+)?(\/|$)/,
    family: {
      id: 'veo3',
      format: 'suffix_s',
      allowed: [4, 6, 8],
      defaultSeconds: 8,
      frames: { first: 'image_url', last: 'last_frame_url' },
      resolution: true,
    },
  },
  {
    match: /^fal-ai\/kling-video\/v[12]([.-][\w.-]*)?\//,
    family: {
      id: 'kling-v1-v2',
      format: 'string',
      allowed: [5, 10],
      defaultSeconds: 5,
      frames: { first: 'image_url', last: 'tail_image_url' },
      resolution: false,
    },
  },
  {
    match: /^fal-ai\/kling-video\/(o3|v3)\//,
    family: {
      id: 'kling-v3-o3',
      format: 'string',
      allowed: range(3, 15),
      defaultSeconds: 5,
      frames: { first: 'start_image_url', last: 'end_image_url' },
      resolution: false,
    },
  },
  {
    match: /^fal-ai\/kling-video\/v4\//,
    family: {
      id: 'kling-v4',
      format: 'integer',
      allowed: range(3, 30),
      defaultSeconds: 5,
      frames: { first: 'start_image_url', last: 'end_image_url' },
      resolution: true,
    },
  },
  {
    match: /^fal-ai\/luma-dream-machine\/ray-2/,
    family: {
      id: 'luma-ray2',
      format: 'suffix_s',
      allowed: [5, 9],
      defaultSeconds: 5,
      frames: { first: 'image_url', last: 'end_image_url' },
      resolution: true,
    },
  },
  {
    match: /^/,
    family: {
      id: 'generic',
      format: 'string',
      defaultSeconds: 5,
      frames: { first: 'image_url', last: 'end_image_url' },
      resolution: true,
    },
  },
];

const FORMATS: ReadonlySet<string> = new Set(['suffix_s', 'string', 'integer']);

/**
 * The family of a fal model id. `overrides` (upstream option `duration_formats`) maps a model-id
 * prefix to a duration format, so an operator can fix a model this table does not know yet.
 */
export function familyOf(model: string, overrides?: Json): Family {
  const id = model.replace(/^\/+/, '');
  const base = ROWS.find((r) => r.match.test(id))!.family;
  let family = base;
  if (isObject(overrides)) {
    let best = '';
    for (const [prefix, fmt] of Object.entries(overrides)) {
      if (typeof fmt === 'string' && FORMATS.has(fmt) && id.startsWith(prefix) && prefix.length > best.length) {
        best = prefix;
        family = { ...base, format: fmt as DurationFormat };
      }
    }
  }
  // Veo 3.1 first/last-frame endpoints name the first frame differently from image-to-video.
  if (family.id === 'veo3' && id.includes('first-last-frame')) {
    family = { ...family, frames: { first: 'first_frame_url', last: 'last_frame_url' } };
  }
  return family;
}

/**
 * Seconds from any of the spellings: 8, "8", "8s", " 8.5 s", and a number of more digits than a
 * double holds (a marker, core/lossless-json.ts). Undefined when it is none of them.
 */
export function parseSeconds(v: Json | undefined): number | undefined {
  const n = vendorNumber(v);
  if (n !== undefined) return Number.isFinite(n) ? n : undefined;
  if (typeof v !== 'string') return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*s?\s*$/i.exec(v);
  return m ? Number(m[1]) : undefined;
}

export function formatDuration(seconds: number, format: DurationFormat): Json {
  switch (format) {
    case 'suffix_s':
      return `${seconds}s`;
    case 'string':
      return String(seconds);
    case 'integer':
      return seconds;
  }
}

export function isInFormat(v: Json, format: DurationFormat): boolean {
  switch (format) {
    case 'suffix_s':
      return typeof v === 'string' && /^\d+(\.\d+)?s$/.test(v);
    case 'string':
      return typeof v === 'string' && /^\d+(\.\d+)?$/.test(v);
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v);
  }
}

/**
 * A client's own `duration`: kept as sent when it already has the family's spelling, converted
 * when it is a recognisable number of seconds in another spelling, and forwarded untouched when
 * it is neither (the model then judges it, which keeps new upstream values usable).
 */
export function nativeDuration(v: Json, format: DurationFormat): Json {
  if (isInFormat(v, format)) return v;
  const s = parseSeconds(v);
  return s === undefined ? v : formatDuration(s, format);
}

/** The `resolution` value for a height: "720p", and "4k" for 2160 (Veo 3.1's spelling). */
export function resolutionLabel(height: number): string {
  return height === 2160 ? '4k' : `${height}p`;
}

/** The `{owner}/{app}` part of a model id (with its namespace), which status and result URLs use. */
export function appPath(model: string): string {
  const parts = model.replace(/^\/+|\/+$/g, '').split('/');
  const n = parts[0] === 'workflows' || parts[0] === 'comfy' ? 3 : 2;
  return parts.slice(0, n).join('/');
}
