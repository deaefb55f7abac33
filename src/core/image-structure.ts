import { crc32 } from 'node:zlib';

/**
 * Whether an image's container is whole, without decoding it. A header sniffer (image-size) reads
 * only the first bytes, so a file cut short in transfer passed as a valid image and was refused by
 * the vendor only after the job had been created and its money held. These checks read the
 * container's own framing: one pass over chunk or segment headers, linear in the file's size, and
 * no pixel data is decompressed.
 *
 * Each returns why the file is not whole, or undefined. Bytes after the container's end (which some
 * writers append) are ignored, as decoders ignore them; bytes missing before it are not.
 */
export type ImageContainer = 'png' | 'jpg' | 'webp';

export function imageStructureProblem(bytes: Buffer, kind: ImageContainer): string | undefined {
  switch (kind) {
    case 'png':
      return pngProblem(bytes);
    case 'jpg':
      return jpegProblem(bytes);
    case 'webp':
      return webpProblem(bytes);
  }
}

const PNG_SIGNATURE = Buffer.from('89504e470d0a1a0a', 'hex');
const CUT = 'it is cut short';
/**
 * The most chunks (PNG, WebP) or header segments (JPEG) walked. Real files have a few dozen, or a
 * few thousand IDAT chunks at most (encoders write 8 KB or more each); a file of nothing but empty
 * chunks would otherwise cost about 40 ns per 12 bytes, some 40 ms per 10 MB, for the walk alone.
 */
const MAX_STEPS = 65_536;
const TOO_MANY = `it has more than ${MAX_STEPS} chunks`;

/** A PNG chunk type is four ASCII letters. */
function isChunkType(b: Buffer, at: number): boolean {
  for (let i = at; i < at + 4; i++) {
    const c = b[i]! | 0x20;
    if (c < 0x61 || c > 0x7a) return false;
  }
  return true;
}

/** Chunk types as big-endian 32-bit numbers, compared without making strings. */
const IHDR = 0x49484452;
const IDAT = 0x49444154;
const IEND = 0x49454e44;

/**
 * Signature, IHDR first (13 bytes), every chunk inside the file, at least one IDAT, and IEND.
 * The CRCs of IHDR and IEND are checked; the others' are not, since one native call per chunk costs
 * about a microsecond and a file of nothing but empty chunks would hold the thread for most of a
 * second per 10 MB (a damaged IDAT is the vendor's decoder's to find, as any other bad pixel data).
 */
function pngProblem(b: Buffer): string | undefined {
  if (b.length < 8 || !b.subarray(0, 8).equals(PNG_SIGNATURE)) return 'it does not start with the PNG signature';
  let at = 8;
  let seenData = false;
  for (let index = 0; ; index++) {
    if (index === MAX_STEPS) return TOO_MANY;
    if (at + 12 > b.length) return `${CUT} (no IEND chunk)`;
    const length = b.readUInt32BE(at);
    if (length > 0x7fffffff || !isChunkType(b, at + 4)) return `its chunk at byte ${at} is damaged`;
    const type = b.readUInt32BE(at + 4);
    const end = at + 12 + length;
    if (end > b.length) return `${CUT} (its ${b.toString('latin1', at + 4, at + 8)} chunk runs past the end of the file)`;
    if (index === 0 && (type !== IHDR || length !== 13)) return 'its first chunk is not IHDR';
    if (index > 0 && type === IHDR) return 'it has a second IHDR chunk';
    if ((type === IHDR || type === IEND) && crc32(b.subarray(at + 4, end - 4)) !== b.readUInt32BE(end - 4))
      return `its ${type === IHDR ? 'IHDR' : 'IEND'} chunk fails its CRC`;
    if (type === IDAT) seenData = true;
    if (type === IEND) return seenData ? undefined : 'it has no image data (IDAT chunk)';
    at = end;
  }
}

/** Markers that stand alone (no length follows): TEM and RST0-7. */
const standalone = (m: number) => m === 0x01 || (m >= 0xd0 && m <= 0xd7);
/** Start-of-frame markers (SOF0-15 but DHT C4, JPG C8 and DAC CC). */
const isFrame = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;

/**
 * SOI, then every header segment inside the file up to the first scan (SOS), a frame header (SOF)
 * before it, and EOI after it. The segments are walked rather than the file searched for EOI: an
 * Exif thumbnail in APP1 carries an EOI of its own, which would make a file cut inside the main
 * image look whole. Past SOS, entropy-coded data never holds FF D9 (an FF there is followed by 00
 * or a restart marker), so the last FF D9 after it is the image's EOI.
 */
function jpegProblem(b: Buffer): string | undefined {
  const layout = jpegLayout(b);
  return typeof layout === 'string' ? layout : undefined;
}

/**
 * A whole JPEG's size and coding, from its frame header (undefined when its framing is not whole).
 * Read here rather than by a header sniffer: a sniffer that loses step (fill bytes between
 * segments, which the standard allows) walks the rest of the file a byte at a time, over a second
 * for 10 MB of crafted bytes, and the walk below has already found the frame.
 */
export function jpegFrame(b: Buffer): { width: number; height: number; marker: number } | undefined {
  const layout = jpegLayout(b);
  if (typeof layout === 'string') return undefined;
  const at = layout.frameAt;
  return { marker: b[at + 1]!, height: b.readUInt16BE(at + 5), width: b.readUInt16BE(at + 7) };
}

/** Where a whole JPEG's first frame header starts, or why its framing is not whole. */
function jpegLayout(b: Buffer): string | { frameAt: number } {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return 'it does not start with the JPEG SOI marker';
  let at = 2;
  let frameAt = -1;
  for (let step = 0; ; step++) {
    if (step === MAX_STEPS) return `it has more than ${MAX_STEPS} header segments`;
    if (at + 2 > b.length) return `${CUT} (it ends inside its headers)`;
    if (b[at] !== 0xff) {
      // Stray bytes before a marker: libjpeg skips them to the next FF with a warning and decodes
      // the image, so a file some camera or editor wrote that way is not refused.
      at = b.indexOf(0xff, at);
      if (at < 0) return `${CUT} (it ends inside its headers)`;
      continue;
    }
    const marker = b[at + 1]!;
    // Fill bytes: any number of FF may precede a marker.
    if (marker === 0xff) {
      at++;
      continue;
    }
    if (standalone(marker)) {
      at += 2;
      continue;
    }
    if (marker === 0xd8 || marker === 0xd9 || marker === 0x00) return `its header at byte ${at} is damaged`;
    if (at + 4 > b.length) return `${CUT} (it ends inside its headers)`;
    const length = b.readUInt16BE(at + 2);
    if (length < 2) return `its header at byte ${at} is damaged`;
    const end = at + 2 + length;
    if (end > b.length) return `${CUT} (a header segment runs past the end of the file)`;
    if (isFrame(marker) && frameAt < 0) {
      // Precision, height, width, component count and at least one component.
      if (length < 11) return `its frame header at byte ${at} is damaged`;
      frameAt = at;
    }
    if (marker === 0xda) {
      if (frameAt < 0) return 'it has no frame header (SOF) before its image data';
      return hasEoiFrom(b, end) ? { frameAt } : `${CUT} (no EOI marker after its image data)`;
    }
    at = end;
  }
}

/**
 * Whether an EOI marker (FF D9) starts at `from` or later. A plain loop from the end: a whole JPEG
 * ends with it, so this returns at once, and a file without one costs one pass (~1.3 ms per MB).
 * Buffer.lastIndexOf with the two-byte marker took ~65 ms on 10 MB of D9 bytes (and indexOf as
 * long on FF bytes): their search slows on a run of one of the marker's bytes.
 */
function hasEoiFrom(b: Buffer, from: number): boolean {
  for (let i = b.length - 1; i > from; i--) if (b[i] === 0xd9 && b[i - 1] === 0xff) return true;
  return false;
}

/**
 * The container a file's first bytes name: the PNG signature, a JPEG's SOI, a RIFF of form WEBP.
 * Decided before anything else reads the file, so that only a check of bounded cost walks it.
 */
export function imageContainerOf(b: Buffer): ImageContainer | undefined {
  if (b.length >= 8 && b.subarray(0, 8).equals(PNG_SIGNATURE)) return 'png';
  if (b.length >= 2 && b[0] === 0xff && b[1] === 0xd8) return 'jpg';
  if (b.length >= 12 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') return 'webp';
  return undefined;
}

const VP8 = 0x56503820; // 'VP8 '
const VP8L = 0x5650384c;
const ANMF = 0x414e4d46;

/**
 * RIFF header with form WEBP, a RIFF size the file holds (a smaller file was cut short), every
 * chunk inside the RIFF, and image data: a VP8 or VP8L bitstream, or animation frames (ANMF).
 */
function webpProblem(b: Buffer): string | undefined {
  if (b.length < 12 || b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WEBP') return 'it does not start with a RIFF WEBP header';
  const riffEnd = 8 + b.readUInt32LE(4);
  if (riffEnd > b.length) return `${CUT} (its RIFF header declares ${riffEnd} bytes, the file has ${b.length})`;
  if (riffEnd < 20) return 'its RIFF size is too small to hold an image';
  let at = 12;
  let image = false;
  for (let step = 0; at < riffEnd; step++) {
    if (step === MAX_STEPS) return TOO_MANY;
    if (at + 8 > riffEnd) return `its chunk at byte ${at} is damaged`;
    const type = b.readUInt32BE(at);
    const size = b.readUInt32LE(at + 4);
    // A chunk's payload is padded to an even length; the pad byte counts in the RIFF size.
    let end = at + 8 + size + (size & 1);
    // Some writers leave out the last chunk's pad byte and count the RIFF size without it: the data
    // is whole, and libwebp's decoder reads it, so such a file is taken.
    if (end === riffEnd + 1 && (size & 1) === 1) end = riffEnd;
    if (end > riffEnd) return `its chunk at byte ${at} runs past the end the RIFF header declares`;
    if (type === VP8 || type === VP8L || type === ANMF) image = true;
    at = end;
  }
  return image ? undefined : 'it has no image data (VP8, VP8L or ANMF chunk)';
}
