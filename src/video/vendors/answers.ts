import type { VideoVendor } from '../types.js';

/**
 * Bounds on what a vendor's poll answer costs the gateway, the same for every vendor.
 *
 * A poll answer is read whole, parsed, redacted, stored as the job's vendor_data, and then sent
 * back on every GET and list of the job. Nothing in a vendor's job object needs more than a few KB,
 * so a vendor (or anything between it and the gateway) that answers megabytes must not make every
 * one of those steps cost megabytes: 50 MB of poll answer used to be stored whole and returned on
 * every GET, and each poll held the event loop for seconds.
 */

/** Largest answer read for a poll whose vendor returns plain JSON (no video bytes inline). */
export const POLL_ANSWER_MAX_BYTES = 1024 * 1024;

/** The cap on a poll answer of `vendor`; undefined keeps the configured one (videos inline). */
export function pollAnswerLimit(vendor: Pick<VideoVendor, 'inlineVideo'>): number | undefined {
  return vendor.inlineVideo ? undefined : POLL_ANSWER_MAX_BYTES;
}

export { boundVendorData, VENDOR_DATA_MAX_BYTES, VENDOR_DATA_TRUNCATED } from '../../core/vendor-data.js';
