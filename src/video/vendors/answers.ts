import type { UpstreamRequest } from '../../http/types.js';
import type { VideoVendor } from '../types.js';

/**
 * Bounds on what a vendor's answer costs the gateway, the same for every vendor.
 *
 * A poll answer is read whole, parsed, redacted, stored as the job's vendor_data, and then sent
 * back on every GET and list of the job. Nothing in a vendor's job object needs more than a few KB,
 * so a vendor (or anything between it and the gateway) that answers megabytes must not make every
 * one of those steps cost megabytes: 50 MB of poll answer used to be stored whole and returned on
 * every GET, and each poll held the event loop for seconds. The same holds for the answers to a
 * create, a remix, an edit or extension, a cancel and a character call: a task id and a status.
 *
 * Every such answer is parsed keeping the numbers a double cannot reproduce (`losslessNumbers`),
 * since its unknown fields are shown to the client as they came (core/lossless-json.ts).
 */

/** Largest answer read for a poll (or any other video call) besides the video bytes a vendor may inline. */
export const POLL_ANSWER_MAX_BYTES = 1024 * 1024;

/**
 * How a poll answer of `vendor` is read. A vendor whose answers never carry the video: under
 * POLL_ANSWER_MAX_BYTES, a larger answer abandoned unread. One that may return the video inline
 * (`inlineVideo`: Veo's base64 bytes, fal's `data:` URL): under the configured cap, but only the
 * video may be large: it is lifted out before parsing, and the rest is held to the same 1 MiB
 * (http/inline-media.ts). A 63 MB answer of small fields used to be parsed on every poll.
 */
export function pollAnswerBounds(vendor: Pick<VideoVendor, 'inlineVideo'>): Pick<UpstreamRequest, 'maxAnswerBytes' | 'inlineMedia' | 'losslessNumbers'> {
  return vendor.inlineVideo
    ? { inlineMedia: { maxRestBytes: POLL_ANSWER_MAX_BYTES }, losslessNumbers: true }
    : { maxAnswerBytes: POLL_ANSWER_MAX_BYTES, losslessNumbers: true };
}

/** A video call other than a poll (create, remix, derive, cancel, characters): its answer never carries a video. */
export function boundedAnswer(req: UpstreamRequest): UpstreamRequest {
  return { ...req, maxAnswerBytes: Math.min(req.maxAnswerBytes ?? POLL_ANSWER_MAX_BYTES, POLL_ANSWER_MAX_BYTES), losslessNumbers: true };
}

export { boundVendorData, keptVendorData, VENDOR_DATA_MAX_BYTES, VENDOR_DATA_TRUNCATED } from '../../core/vendor-data.js';
