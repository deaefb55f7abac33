import { errors } from '../../../core/errors.js';
import { isObject, type Json, type JsonObject } from '../../../core/json.js';
import type { InlineMedia } from '../../types.js';

/**
 * Vertex takes images and videos as a Media union: `{bytesBase64Encoded | gcsUri, mimeType}`.
 * A client may give any media value as an http(s) URL (fetched by the gateway, sent as base64),
 * a gs:// URI (passed as it is), a data: URL, or a Media object (snake_case keys accepted).
 */
export type MediaKind = 'image' | 'video';

/** Looks up the bytes the gateway fetched for a URL. */
export type MediaResolver = (url: string) => InlineMedia | undefined;

const URL_KEYS = ['url', 'image_url', 'video_url', 'uri'] as const;
const MEDIA_KEY_ALIASES: Record<string, string> = {
  bytes_base64_encoded: 'bytesBase64Encoded',
  gcs_uri: 'gcsUri',
  mime_type: 'mimeType',
};
const MEDIA_KEYS = new Set(['bytesBase64Encoded', 'gcsUri', 'mimeType', ...Object.keys(MEDIA_KEY_ALIASES), ...URL_KEYS]);

export function isHttpUrl(v: unknown): v is string {
  return typeof v === 'string' && /^https?:\/\//i.test(v);
}

/** The http(s) URLs inside one media value, i.e. what the gateway must fetch for it. */
export function mediaUrls(value: Json | undefined): string[] {
  if (isHttpUrl(value)) return [value];
  if (!isObject(value)) return [];
  return URL_KEYS.map((k) => value[k]).filter(isHttpUrl);
}

/** Converts a client media value into a Vertex Media object, or throws a 400 naming `param`. */
export function toVertexMedia(value: Json, param: string, kind: MediaKind, resolve: MediaResolver): JsonObject {
  if (typeof value === 'string') return fromString(value, param, kind, resolve);
  if (!isObject(value)) throw badMedia(param);
  const out: JsonObject = {};
  let fromUrl: JsonObject | undefined;
  for (const [k, v] of Object.entries(value)) {
    if ((URL_KEYS as readonly string[]).includes(k)) {
      if (typeof v !== 'string') throw badMedia(param);
      fromUrl = fromString(v, param, kind, resolve);
      continue;
    }
    const camel = Object.hasOwn(MEDIA_KEY_ALIASES, k) ? MEDIA_KEY_ALIASES[k]! : k;
    // A camelCase key beats its snake_case alias whatever the order they came in.
    if (camel !== k && Object.hasOwn(value, camel)) continue;
    out[camel] = v;
  }
  // An explicit mimeType wins over the one the fetch reported.
  const media = fromUrl ? { ...fromUrl, ...out } : out;
  if (media['mimeType'] === undefined) {
    if (typeof media['gcsUri'] === 'string') media['mimeType'] = mimeFromName(media['gcsUri'], kind);
    else if (typeof media['bytesBase64Encoded'] === 'string') media['mimeType'] = sniffBase64(media['bytesBase64Encoded'], kind);
  }
  return media;
}

/** A referenceImages item: a bare media value (asset by default) or `{image, referenceType}`. */
export function toReferenceImage(item: Json, param: string, resolve: MediaResolver): JsonObject {
  if (!isObject(item)) return { image: toVertexMedia(item, param, 'image', resolve), referenceType: 'asset' };
  const rest: JsonObject = {};
  const mediaPart: JsonObject = {};
  let referenceType: Json | undefined;
  let image: Json | undefined;
  for (const [k, v] of Object.entries(item)) {
    if (k === 'image') image = v;
    else if (k === 'referenceType') referenceType = v;
    else if (k === 'reference_type') referenceType ??= v;
    else if (MEDIA_KEYS.has(k)) mediaPart[k] = v;
    else rest[k] = v;
  }
  if (image === undefined && Object.keys(mediaPart).length === 0) throw badMedia(param);
  const media = toVertexMedia(image ?? mediaPart, param, 'image', resolve);
  return { ...rest, image: media, referenceType: referenceType ?? 'asset' };
}

/** The URLs a referenceImages item needs fetched. */
export function referenceImageUrls(item: Json): string[] {
  if (isObject(item) && item['image'] !== undefined) return mediaUrls(item['image']);
  return mediaUrls(item);
}

function fromString(v: string, param: string, kind: MediaKind, resolve: MediaResolver): JsonObject {
  if (v.startsWith('gs://')) return { gcsUri: v, mimeType: mimeFromName(v, kind) };
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(v);
  if (data) return { bytesBase64Encoded: data[2]!, mimeType: data[1]! };
  if (isHttpUrl(v)) {
    const got = resolve(v);
    if (!got) throw errors.invalidRequest(`The ${kind} at '${param}' could not be fetched.`, param);
    return { bytesBase64Encoded: got.base64, mimeType: got.mimeType || mimeFromName(v, kind) };
  }
  throw badMedia(param);
}

function badMedia(param: string) {
  return errors.invalidRequest(
    `'${param}' must be an http(s) URL, a gs:// URI, a data: URL or an object with bytesBase64Encoded or gcsUri.`,
    param,
  );
}

export function mimeFromName(name: string, kind: MediaKind): string {
  const ext = /\.([a-z0-9]+)(?:[?#].*)?$/i.exec(name)?.[1]?.toLowerCase();
  switch (ext) {
    case 'png':
      return 'image/png';
    case 'jpg':
    case 'jpeg':
      return 'image/jpeg';
    case 'webp':
      return 'image/webp';
    case 'mp4':
      return 'video/mp4';
    case 'mov':
      return 'video/quicktime';
    default:
      return kind === 'video' ? 'video/mp4' : 'image/jpeg';
  }
}

/** Vertex requires mimeType; the first bytes of the base64 text tell the common formats apart. */
function sniffBase64(b64: string, kind: MediaKind): string {
  if (b64.startsWith('iVBORw0KGgo')) return 'image/png';
  if (b64.startsWith('/9j/')) return 'image/jpeg';
  if (b64.startsWith('UklGR')) return 'image/webp';
  return kind === 'video' ? 'video/mp4' : 'image/jpeg';
}
