import type { Json } from '../core/json.js';
import { parseLossless } from '../core/lossless-json.js';
import { clip } from '../core/redact-cut.js';
import { liftMedia } from './inline-media.js';
import { jsonNestsDeeper } from './json-depth.js';
import { TransportError, type UpstreamRequest, type UpstreamResponse } from './types.js';

/** Deepest nesting of an upstream's JSON answer that is parsed (vendor objects nest a dozen levels at most). */
export const MAX_UPSTREAM_JSON_DEPTH = 256;

/** Upstream text kept on an answer for messages and logs. */
const MAX_ANSWER_TEXT = 1_000_000;

/**
 * An upstream answer read whole, decoded for the adapters: its text and, when it is JSON, the parsed
 * value. Every answer read whole goes through here, so each gets the same bounds.
 *
 * An answer nested deeper than any vendor object is left unparsed: parsing a hostile nesting is
 * itself seconds of the event loop (64 MB are allowed), and every later walk of it (redaction,
 * storage, presentation) recurses, so a hostile upstream could exhaust the stack.
 *
 * An answer whose unknown fields are handed on to clients (`losslessNumbers`: a video vendor's,
 * shown as a job's vendor_data) keeps each number a double cannot reproduce as a marker string
 * (core/lossless-json.ts), the media lifted out first as for any other parse.
 *
 * An answer that may carry media inline goes through `mediaAnswer` instead.
 */
export function upstreamAnswer(
  status: number,
  headers: Record<string, string>,
  raw: Buffer,
  shape: Pick<UpstreamRequest, 'losslessNumbers'> = {},
): UpstreamResponse {
  const text = raw.toString('utf8');
  let json: Json | undefined;
  if (text.length > 0) {
    const c = text.charCodeAt(0);
    const looksJson = c === 0x7b /* { */ || c === 0x5b /* [ */ || (headers['content-type'] ?? '').includes('json');
    if (looksJson && !jsonNestsDeeper(text, MAX_UPSTREAM_JSON_DEPTH)) {
      try {
        json = shape.losslessNumbers ? parseLossless(text) : (JSON.parse(text) as Json);
      } catch {
        json = undefined;
      }
    }
  }
  return { status, headers, json, text: clip(text, MAX_ANSWER_TEXT) };
}

/**
 * An answer that may carry media inline (`inlineMedia`, a vendor returning the video in its poll
 * answer) is read under the configured cap, but only its media may be large: the media strings are
 * lifted out before anything is parsed (inline-media.ts), and an answer whose rest is over
 * `maxRestBytes` is refused unparsed, as an answer over the read cap is (`too_large`). The parsed
 * rest holds placeholders for the media (`media` on the answer); an answer within the cap is read
 * as any other.
 */
export async function mediaAnswer(
  status: number,
  headers: Record<string, string>,
  raw: Buffer,
  shape: Pick<UpstreamRequest, 'inlineMedia' | 'losslessNumbers'>,
): Promise<UpstreamResponse> {
  const cap = shape.inlineMedia?.maxRestBytes;
  if (cap === undefined || raw.length <= cap) return upstreamAnswer(status, headers, raw, shape);
  const lifted = await liftMedia(raw, cap);
  const rest = lifted?.restBytes ?? raw.length;
  if (!lifted || rest > cap) throw new TransportError('too_large', `upstream answer of ${raw.length} bytes holds ${rest} bytes besides inline media, over ${cap}`, true);
  return { ...upstreamAnswer(status, headers, lifted.rest, shape), media: lifted.media };
}
