/**
 * The video types a finished video is served under: the containers the gateway recognises by their
 * first bytes (core/sniff.ts). A vendor's other words for them, or anything else, are not repeated.
 */
const SERVED_TYPES = new Set(['video/mp4', 'video/quicktime', 'video/webm']);

/**
 * The media type a finished video is stored and served under. The vendor's word (Veo's `mimeType`)
 * becomes a response header on the gateway's own origin, also on a signed link that needs no key,
 * so only one of SERVED_TYPES is kept (parameters dropped, lower-cased); anything else is served as
 * `video/mp4`. A free-form subtype would carry whatever the vendor put there (a vendor quoting the
 * credential it was sent, `video/bearerya29...`) to the client, and a header Node refuses would fail
 * every download of a paid video with a 500.
 */
export function videoMediaType(declared: unknown): string {
  if (typeof declared !== 'string') return 'video/mp4';
  const type = declared.split(';')[0]!.trim().toLowerCase();
  return SERVED_TYPES.has(type) ? type : 'video/mp4';
}
