
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

/**
 * Vendors whose poll answers can carry the finished video itself: Veo returns base64 bytes in the
 * operation when no storageUri is set, fal returns a `data:` URL in sync mode. Their polls keep the
 * configured `server.max_answer_bytes`; the bytes are moved into the blob store and never reach
 * vendor_data. A new vendor that returns videos inline must be listed here.
 */
const INLINE_VIDEO_VENDORS: ReadonlySet<string> = new Set(['veo', 'fal']);

/** The cap for one poll answer of this vendor; undefined means the configured default applies. */
export function pollAnswerLimit(vendorId: string): number | undefined {
  return INLINE_VIDEO_VENDORS.has(vendorId) ? undefined : POLL_ANSWER_MAX_BYTES;
}

export { boundVendorData, VENDOR_DATA_MAX_BYTES, VENDOR_DATA_TRUNCATED } from '../../core/vendor-data.js';
