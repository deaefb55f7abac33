/** What a file is, from its first bytes (a client's declared content type and file name do not count). */
export interface SniffedVideo {
  mime: 'video/mp4' | 'video/quicktime' | 'video/webm';
  ext: 'mp4' | 'mov' | 'webm';
}

/**
 * MP4 and QuickTime carry an `ftyp` box at offset 4 (its major brand tells them apart: `qt  ` is
 * QuickTime); WebM (Matroska) starts with the EBML magic 1A 45 DF A3 and names its DocType `webm`.
 */
export function sniffVideo(bytes: Buffer): SniffedVideo | undefined {
  if (bytes.length >= 12 && bytes.subarray(4, 8).toString('latin1') === 'ftyp') {
    const brand = bytes.subarray(8, 12).toString('latin1');
    return brand === 'qt  ' ? { mime: 'video/quicktime', ext: 'mov' } : { mime: 'video/mp4', ext: 'mp4' };
  }
  if (bytes.length >= 4 && bytes.readUInt32BE(0) === 0x1a45dfa3) {
    const head = bytes.subarray(0, 64).toString('latin1');
    if (head.includes('webm')) return { mime: 'video/webm', ext: 'webm' };
  }
  return undefined;
}

/** How many leading bytes `startsLikeVideo` and `imageTypeOf` look at (WebP's RIFF form is at 8..12). */
export const MEDIA_HEAD_BYTES = 12;

/** A leading byte pattern; `undefined` stands for any byte. */
type Pattern = readonly (number | undefined)[];
const ANY4 = [undefined, undefined, undefined, undefined];
const ascii = (s: string): number[] => [...Buffer.from(s, 'latin1')];

/**
 * The top-level ISO-BMFF boxes a whole MP4 or QuickTime file starts with: `ftyp` (every MP4 since
 * 2001), `styp` (a fragmented segment), and the boxes older QuickTime writers put first (`moov`,
 * `mdat`, `free`, `skip`, `wide`, `pnot`). Bytes 0-3 are the box size; the type is at 4-8.
 */
const FIRST_BOXES = ['ftyp', 'styp', 'moov', 'mdat', 'free', 'skip', 'wide', 'pnot'];
const VIDEO_PATTERNS: Pattern[] = [...FIRST_BOXES.map((t) => [...ANY4, ...ascii(t)]), [0x1a, 0x45, 0xdf, 0xa3] /* EBML: WebM, Matroska */];

const IMAGE_PATTERNS: readonly [string, Pattern][] = [
  ['image/png', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
  ['image/jpeg', [0xff, 0xd8, 0xff]],
  ['image/gif', [...ascii('GIF8'), undefined, ...ascii('a')]],
  ['image/webp', [...ascii('RIFF'), ...ANY4, ...ascii('WEBP')]],
];

/** `partial`: `head` is all there is of a short range, so only the bytes present are compared. */
function matches(head: Buffer, pattern: Pattern, partial: boolean): boolean {
  if (head.length === 0 || (head.length < pattern.length && !partial)) return false;
  for (let i = 0; i < Math.min(head.length, pattern.length); i++) if (pattern[i] !== undefined && head[i] !== pattern[i]) return false;
  return true;
}

/**
 * Boxes of the FileTypeBox syntax (ISO/IEC 14496-12 4.3; `styp` is the same box for a segment):
 * size, type, a major brand and a minor version of 4 bytes each, then compatible brands of 4 bytes
 * each. So the box is at least 16 bytes, a multiple of 4, and its brand is four printable characters.
 */
const BRAND_BOXES = new Set(['ftyp', 'styp']);

/** Whether bytes are printable ASCII (a brand is a four-character code: `isom`, `mp42`, `qt  `). */
function printable(bytes: Buffer): boolean {
  for (const b of bytes) if (b < 0x20 || b > 0x7e) return false;
  return true;
}

/**
 * Whether a file's first bytes are those of a video container: an ISO-BMFF box (MP4, QuickTime)
 * whose size is possible (0: to the end of the file; 1: a 64-bit size follows; else at least its
 * 8-byte header), or the EBML magic of WebM and Matroska. An `ftyp` or `styp` box must be one
 * (BRAND_BOXES): an 8-byte `ftyp` followed by an HTML page is not a video. `partial` is for the
 * answer to a range shorter than the check (a player's `bytes=0-1` probe): the bytes present must
 * fit a signature.
 */
export function startsLikeVideo(head: Buffer, partial = false): boolean {
  if (!VIDEO_PATTERNS.some((p) => matches(head, p, partial))) return false;
  if (head.length < 4 || head[0] === 0x1a) return true;
  const size = head.readUInt32BE(0);
  if (head.length >= 8 && BRAND_BOXES.has(head.toString('latin1', 4, 8)))
    return size >= 16 && size % 4 === 0 && printable(head.subarray(8, 12));
  return size === 0 || size === 1 || size >= 8;
}

/** The raster image type a file's first bytes name (PNG, JPEG, GIF, WebP), or undefined. */
export function imageTypeOf(head: Buffer): string | undefined {
  return IMAGE_PATTERNS.find(([, p]) => matches(head, p, false))?.[0];
}
