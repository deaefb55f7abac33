import { errors } from '../core/errors.js';
import { readMp4Header } from '../core/mp4-header.js';
import { sniffVideo } from '../core/sniff.js';

export interface CheckedVideo {
  mime: string;
  ext: string;
  /** Read from the MP4/MOV header where present (WebM is not parsed). */
  width?: number;
  height?: number;
  seconds?: number;
}

export interface VideoLimits {
  maxBytes: number;
  maxSeconds: number;
}

const MIN_SIDE = 16;
const MAX_SIDE = 8192;

/**
 * An uploaded video, checked from its bytes: MP4, MOV or WebM by their magic; within the size
 * limit; for MP4/MOV the duration and dimensions from the header (cheap: no decoding), so a clip
 * no vendor would take is refused before anything is stored or held. An MP4/MOV the bounded header
 * walk could not read whole is refused too: its unread part may hold frames (movie fragments) that
 * a player plays and the vendor bills, and the length it measured would hold and bill less.
 */
export function checkVideoUpload(bytes: Buffer, param: string, limits: VideoLimits): CheckedVideo {
  const kind = sniffVideo(bytes);
  if (!kind) throw errors.invalidRequest(`'${param}' is not an MP4, MOV or WebM video.`, param, 'unsupported_media_type');
  if (bytes.length > limits.maxBytes) throw errors.uploadTooLarge(limits.maxBytes, param);
  if (kind.ext === 'webm') return { ...kind };
  const head = readMp4Header(bytes);
  if (head.unread !== undefined)
    throw errors.invalidRequest(`'${param}' cannot be measured: ${head.unread}. Send it re-muxed as a plain MP4.`, param, 'invalid_media');
  if (head.seconds === undefined) throw errors.invalidRequest(`'${param}' is not a playable video (no movie header).`, param, 'invalid_media');
  if (head.seconds <= 0 || head.seconds > limits.maxSeconds)
    throw errors.invalidRequest(`'${param}' lasts ${head.seconds.toFixed(1)} s; at most ${limits.maxSeconds} s is accepted.`, param, 'invalid_media');
  const { width, height } = head;
  if (width !== undefined && height !== undefined && (width < MIN_SIDE || height < MIN_SIDE || width > MAX_SIDE || height > MAX_SIDE))
    throw errors.invalidRequest(`'${param}' is ${width}x${height}; each side must be between ${MIN_SIDE} and ${MAX_SIDE} pixels.`, param, 'invalid_media');
  return { ...kind, ...head };
}
