import type { AnswerMedia } from '../http/inline-media.js';
import type { UpstreamResponse } from '../http/types.js';
import type { VideoOutput } from './types.js';

/**
 * A poll answer that may carry the video inline is parsed with its media lifted out
 * (http/inline-media.ts): what an adapter reads holds placeholders in place of the long base64
 * strings. An inline video the adapter found becomes the base64 characters themselves, as bytes (a
 * view of the answer, decoded a piece per turn when the job's result is taken: inline-output.ts);
 * every other placeholder goes back as the string the vendor sent, so vendor_data and messages are
 * what they were.
 */

/** An answer read whole with its media put back as strings: a non-2xx answer is judged as the vendor wrote it. */
export function restoredAnswer(res: UpstreamResponse): UpstreamResponse {
  return res.media && res.json !== undefined ? { ...res, json: res.media.restore(res.json) } : res;
}

/** What an adapter made of an answer (`out`), with its inline videos as bytes and every other placeholder restored. */
export function withLiftedMedia<T>(out: T, media: AnswerMedia | undefined): T {
  if (!media || out === null || typeof out !== 'object') return out;
  const outputs = (out as { outputs?: unknown }).outputs;
  if (Array.isArray(outputs)) {
    for (const o of outputs as VideoOutput[]) {
      const text = typeof o?.inlineBase64 === 'string' ? media.text(o.inlineBase64) : undefined;
      if (text) o.inlineBase64 = text;
    }
  }
  // Bytes are left as they are: only the placeholders still standing become strings.
  return media.restore(out);
}
