import { decodeStrictBase64 } from '../core/base64-steps.js';
import { startsLikeVideo, VIDEO_HEAD_BYTES } from '../core/sniff.js';
import type { JobRecord } from '../store/job-types.js';
import type { VideoDeps } from './deps.js';
import { jobUpstream } from './job-upstream.js';
import { isDocumentType, loggableType } from './media-check.js';
import type { VideoOutput } from './types.js';

/**
 * Videos a vendor returns inside its answer (base64) are checked when the job's result is taken,
 * before anything is charged or kept: what is stored is later served as the video from the
 * gateway's own origin, and what is charged must be a video. Bytes that do not decode, decode to
 * nothing, or are not a video (an HTML page, which may quote the credentials the gateway sent) are
 * the vendor's failure, not a result.
 */

/**
 * The bytes of strict base64, or undefined: one alphabet (standard or URL-safe, not mixed), padding
 * only at the end and only to complete the last group, and nothing else. Node's decoder does not
 * fail on what it cannot read: it skips it (`!!!!` decodes to no bytes at all) or stops there (at an
 * "=" inside the text), so every character was read as base64 exactly when the decoded length is
 * the one the text's length promises. Checked so rather than with a pattern over the whole text: a
 * video of 40 MB of base64 took ~180 ms to match, against a few ms for the searches and ~50 ms for
 * the decoding it needs anyway. For the text of a small answer; a large one's video comes as bytes,
 * decoded by the same rules a piece per turn (core/base64-steps.ts).
 */
export function strictBase64(text: string): Buffer | undefined {
  const pad = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const data = text.length - pad;
  // Padded: whole groups of four. Unpadded: a last group of one character holds no whole byte.
  if (pad > 0 ? text.length % 4 !== 0 : data % 4 === 1) return undefined;
  // The decoder reads both alphabets at once; a text of both is neither.
  if ((text.includes('-') || text.includes('_')) && (text.includes('+') || text.includes('/'))) return undefined;
  const bytes = Buffer.from(text, 'base64');
  return bytes.length === Math.floor((data * 6) / 8) ? bytes : undefined;
}

/**
 * An inline output's bytes, or why they are not a video. Base64 lifted out of a large answer (bytes)
 * is decoded a piece per turn of the event loop: 60 MB of it decoded at once held the loop for tens
 * of ms, with the copies made to get there for as long again.
 */
export async function inlineVideo(out: VideoOutput): Promise<{ bytes: Buffer } | { problem: string }> {
  // The download of a URL refuses a declared document type whatever its bytes; an inline one alike.
  if (isDocumentType(out.mimeType)) return { problem: 'declared a document type' };
  const text = out.inlineBase64 ?? '';
  const bytes = typeof text === 'string' ? strictBase64(text) : await decodeStrictBase64(text);
  if (!bytes) return { problem: 'not valid base64' };
  if (bytes.length === 0) return { problem: 'empty' };
  if (!startsLikeVideo(bytes.subarray(0, VIDEO_HEAD_BYTES))) return { problem: 'first bytes are not a video container' };
  return { bytes };
}

/**
 * The decoded bytes of each inline output (undefined for an output given by URL), or undefined when
 * one of them is not a video: then the whole result is refused (a vendor that returned something
 * else in place of one video is not trusted with the others), with a warning naming the job, the
 * upstream, the output, its declared type (well-formed and redacted) and the reason, never the bytes.
 * Each output's base64 is let go once decoded (`outputs` is changed in place): the text of a large
 * answer is a view of all of it, tens of MB that need not outlive the decoding.
 */
export async function takeInlineVideos(deps: VideoDeps, job: JobRecord, outputs: VideoOutput[]): Promise<(Buffer | undefined)[] | undefined> {
  const taken: (Buffer | undefined)[] = [];
  for (let i = 0; i < outputs.length; i++) {
    const out = outputs[i]!;
    if (out.inlineBase64 === undefined) {
      taken.push(undefined);
      continue;
    }
    const checked = await inlineVideo(out);
    outputs[i] = { ...out, inlineBase64: '' };
    if ('problem' in checked) {
      const declared = loggableType(out.mimeType, jobUpstream(deps, job));
      deps.log.warn({ job: job.id, upstream: job.upstream, output: i, declared, reason: checked.problem }, 'video result: an inline video is not a video; the job fails, nothing charged');
      return undefined;
    }
    taken.push(checked.bytes);
  }
  return taken;
}
