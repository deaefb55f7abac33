import { errors } from '../core/errors.js';
import { traced } from '../ops/tracing.js';
import type { VideoDeps } from './deps.js';
import type { CreateInput, InlineMedia, VideoVendor } from './types.js';

/** At most this many media URLs per request, fetched this many at a time (memory and fan-out bounds). */
const MAX_MEDIA_URLS = 8;
const MEDIA_CONCURRENCY = 4;

/**
 * Fetches the media URLs a vendor wants as bytes (the gateway's own upload links are at hand
 * already: never fetched), bounded in number and concurrency.
 */
export async function fetchMedia(
  deps: VideoDeps,
  vendor: VideoVendor,
  input: Omit<CreateInput, 'media'>,
  signal?: AbortSignal,
  prefetched?: ReadonlyMap<string, InlineMedia>,
): Promise<Map<string, InlineMedia>> {
  const out = new Map<string, InlineMedia>();
  const urls: string[] = [];
  for (const url of new Set(vendor.inlineMedia?.(input) ?? [])) {
    const known = prefetched?.get(url);
    if (known) out.set(url, known);
    else urls.push(url);
  }
  if (urls.length > MAX_MEDIA_URLS)
    throw errors.invalidRequest(`At most ${MAX_MEDIA_URLS} media URLs can be fetched for one video; got ${urls.length}.`, 'media', 'too_many_media');
  let next = 0;
  const worker = async () => {
    while (next < urls.length) {
      const url = urls[next++]!;
      const param = paramForUrl(input, url);
      out.set(url, await traced('media fetch', mediaAttributes(url, param), () => deps.media.fetch(url, param, signal)));
    }
  };
  await Promise.all(Array.from({ length: Math.min(MEDIA_CONCURRENCY, urls.length) }, worker));
  return out;
}

/** Only the scheme and host of a client's media URL go into a span: paths and queries may carry tokens. */
function mediaAttributes(url: string, param: string): Record<string, string> {
  if (url.startsWith('data:')) return { 'url.scheme': 'data', 'gateway.param': param };
  try {
    const u = new URL(url);
    return { 'url.scheme': u.protocol.replace(':', ''), 'server.address': u.hostname, 'gateway.param': param };
  } catch {
    return { 'gateway.param': param };
  }
}

function paramForUrl(input: Omit<CreateInput, 'media'>, url: string): string {
  const i = input.std.frameImages.findIndex((f) => f.url === url);
  if (i >= 0) return `frame_images[${i}].image_url`;
  const j = input.std.inputReferences.findIndex((r) => r.url === url);
  if (j >= 0) return `input_references[${j}].url`;
  const key = Object.keys(input.native).find((k) => JSON.stringify(input.native[k]).includes(url));
  return key ?? 'media';
}
