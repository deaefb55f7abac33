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
 * the decoding it needs anyway.
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

/** An inline output's bytes, or why they are not a video. */
export function inlineVideo(out: VideoOutput): { bytes: Buffer } | { problem: string } {
  // The download of a URL refuses a declared document type whatever its bytes; an inline one alike.
  if (isDocumentType(out.mimeType)) return { problem: 'declared a document type' };
  const bytes = strictBase64(out.inlineBase64 ?? '');
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
 */
export function takeInlineVideos(deps: VideoDeps, job: JobRecord, outputs: readonly VideoOutput[]): (Buffer | undefined)[] | undefined {
  const taken: (Buffer | undefined)[] = [];
  for (let i = 0; i < outputs.length; i++) {
    const out = outputs[i]!;
    if (out.inlineBase64 === undefined) {
      taken.push(undefined);
      continue;
    }
    const checked = inlineVideo(out);
    if ('problem' in checked) {
      const declared = loggableType(out.mimeType, jobUpstream(deps, job));
      deps.log.warn({ job: job.id, upstream: job.upstream, output: i, declared, reason: checked.problem }, 'video result: an inline video is not a video; the job fails, nothing charged');
      return undefined;
    }
    taken.push(checked.bytes);
  }
  return taken;
}
