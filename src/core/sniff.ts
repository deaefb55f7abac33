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

/** How many leading bytes `imageTypeOf` looks at (WebP's RIFF form is at 8..12). */
export const MEDIA_HEAD_BYTES = 12;

/**
 * How many leading bytes `startsLikeVideo` looks at: the first box, and past leading filler boxes
 * (`free`, `skip`, `wide`) the box after them, its header and brand (or a movie box's first child's
 * header). A few dozen bytes, so a download peeks them without holding more.
 */
export const VIDEO_HEAD_BYTES = 64;

/** A leading byte pattern; `undefined` stands for any byte. */
type Pattern = readonly (number | undefined)[];
const ANY4 = [undefined, undefined, undefined, undefined];
const ascii = (s: string): number[] => [...Buffer.from(s, 'latin1')];

/**
 * The top-level ISO-BMFF boxes a video is taken to open with (bytes 0-3 are the box size; the type
 * is at 4-8): a FileTypeBox, `ftyp` (every MP4 since 2001, and every QuickTime file since QuickTime 6,
 * brand `qt  `) or `styp` (a fragmented segment), or the movie box `moov` of an older QuickTime file.
 * An `mdat` or `pnot` first is not: an `mdat` holds raw samples and a `pnot` points at a preview
 * picture, so nothing in the first bytes would show a video rather than any 8 bytes ahead of an
 * error page, and no writer of the last two decades opens a file with either.
 */
const OPENING_BOXES = ['ftyp', 'styp', 'moov'];

/**
 * Boxes that only hold space: one says nothing of what follows it (an 8-byte `free` ahead of an
 * HTML page is not a video), so the box after it is checked in its place.
 */
const FILLER_BOXES = new Set(['free', 'skip', 'wide']);

const BOX_PATTERNS: Pattern[] = [...OPENING_BOXES, ...FILLER_BOXES].map((t) => [...ANY4, ...ascii(t)]);
const EBML: Pattern = [0x1a, 0x45, 0xdf, 0xa3]; // WebM, Matroska

/**
 * The boxes a movie box holds (ISO/IEC 14496-12 8.2.1, QuickTime's movie atom), one of which is its
 * first: the movie header `mvhd` in practice; a compressed (`cmov`) or reference (`rmra`) movie, or
 * a profile (`prfl`) ahead of the header, in QuickTime.
 */
const MOVIE_CHILDREN = ['mvhd', 'cmov', 'rmra', 'prfl', 'trak', 'udta', 'meta', 'iods', 'mvex', 'free', 'skip', 'wide'];

/** The shortest movie header of each version (version 0: 32-bit times, 108 bytes; version 1: 64-bit, 120). */
const MVHD_BYTES = [108, 120];

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
 * Whether a file's first bytes are those of a video container: an ISO-BMFF file (MP4, QuickTime)
 * opening with one of OPENING_BOXES, or the EBML magic of WebM and Matroska. Each opening box is
 * judged by more than its 8-byte header, so that no 8 bytes ahead of an HTML page pass: an `ftyp`
 * or `styp` must be a whole FileTypeBox (BRAND_BOXES), a `moov` must hold a movie's first box
 * (movieFits). Leading filler boxes (FILLER_BOXES) are stepped over, and the box after them must
 * be one of these within the first VIDEO_HEAD_BYTES: a filler that reaches past them, or ends the
 * file, leaves nothing shown to be a video. `partial` is for the answer to a range shorter than the
 * check (a player's `bytes=0-1` probe): the bytes present must fit a signature.
 */
export function startsLikeVideo(head: Buffer, partial = false): boolean {
  head = head.subarray(0, VIDEO_HEAD_BYTES);
  if (head[0] === 0x1a) return matches(head, EBML, partial);
  let at = 0;
  for (;;) {
    const box = head.subarray(at);
    // A range that ends where a filler does: what it holds fits.
    if (at > 0 && box.length === 0) return partial;
    if (!BOX_PATTERNS.some((p) => matches(box, p, partial))) return false;
    if (box.length < 8) return box.length < 4 || possibleSize(box.readUInt32BE(0));
    const type = box.toString('latin1', 4, 8);
    if (!FILLER_BOXES.has(type)) return openingBoxFits(box, type, partial);
    const end = fillerEnd(box);
    if (end === 'short') return partial;
    if (end === undefined) return false;
    // Past the bytes looked at: a range that ends inside the filler fits; anything else shows no video.
    if (end > box.length) return partial;
    at += end;
  }
}

/** 0: to the end of the file; 1: a 64-bit size follows the type; else at least the 8-byte header. */
const possibleSize = (size: number): boolean => size === 0 || size === 1 || size >= 8;

/**
 * The length of the filler box `box` starts with; `short` when its 64-bit size is not in `box`;
 * undefined when no box can follow it (size 0 runs to the end of the file) or its size is impossible.
 */
function fillerEnd(box: Buffer): number | 'short' | undefined {
  const size = box.readUInt32BE(0);
  if (size >= 8) return size;
  if (size !== 1) return undefined;
  if (box.length < 16) return 'short';
  const large = box.readBigUInt64BE(8);
  if (large < 16n) return undefined;
  return large > BigInt(box.length) ? Number.POSITIVE_INFINITY : Number(large);
}

/** The rules for the box a video opens with (after any filler): a whole FileTypeBox, or a movie box that holds a movie. */
function openingBoxFits(box: Buffer, type: string, partial: boolean): boolean {
  if (!BRAND_BOXES.has(type)) return movieFits(box, partial);
  const size = box.readUInt32BE(0);
  return size >= 16 && size % 4 === 0 && (partial || box.length >= 12) && printable(box.subarray(8, 12));
}

/**
 * Whether a `moov` opening the file holds a movie as far as the bytes looked at show: its size is
 * possible (0: to the end of the file; 1: a 64-bit size follows, whole in `box`), and right after
 * its header comes the header of a box a movie holds (MOVIE_CHILDREN) with a 32-bit size of at
 * least 8 bytes that fits in the movie box; a movie header is of version 0 or 1 and at least that
 * version's length. A `moov` header followed by an HTML page, zeros or nothing is refused.
 */
function movieFits(box: Buffer, partial: boolean): boolean {
  const size = box.readUInt32BE(0);
  let header = 8;
  // The bytes the movie box's children may take.
  let room = size === 0 ? Number.POSITIVE_INFINITY : size - 8;
  if (size === 1) {
    if (box.length < 16) return partial;
    header = 16;
    const large = box.readBigUInt64BE(8);
    room = large > BigInt(Number.MAX_SAFE_INTEGER) ? Number.POSITIVE_INFINITY : Number(large) - 16;
  } else if (size !== 0 && size < 8) return false;
  const child = box.subarray(header, header + 9);
  if (child.length < 8 && !partial) return false;
  const childSize = child.length >= 4 ? child.readUInt32BE(0) : undefined;
  if (childSize !== undefined && (childSize < 8 || childSize > room)) return false;
  const type = child.toString('latin1', Math.min(4, child.length), Math.min(8, child.length));
  if (!MOVIE_CHILDREN.some((t) => t.startsWith(type))) return false;
  if (type !== 'mvhd' || child.length < 9) return true;
  const version = child[8]!;
  return version < MVHD_BYTES.length && childSize! >= MVHD_BYTES[version]!;
}

/** The raster image type a file's first bytes name (PNG, JPEG, GIF, WebP), or undefined. */
export function imageTypeOf(head: Buffer): string | undefined {
  return IMAGE_PATTERNS.find(([, p]) => matches(head, p, false))?.[0];
}
