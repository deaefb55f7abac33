/** A video type's name as RFC 6838 allows it: a letter or digit, then up to 126 of these. */
const VIDEO_TYPE = /^video\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/**
 * The media type a finished video is stored and served under. The vendor's word (Veo's `mimeType`)
 * becomes a response header on the gateway's own origin, so only a plain `video/<subtype>` is kept
 * (parameters dropped, lower-cased); anything else, a line break or a non-video type among them, is
 * served as `video/mp4`. A header Node refuses would otherwise fail every download of a paid video
 * with a 500, and a stored object's content type be refused by S3.
 */
export function videoMediaType(declared: unknown): string {
  if (typeof declared !== 'string') return 'video/mp4';
  const type = declared.split(';')[0]!.trim().toLowerCase();
  return VIDEO_TYPE.test(type) ? type : 'video/mp4';
}
