import { randomBytes } from 'node:crypto';
import { imageSize } from 'image-size';
import { errors } from '../core/errors.js';
import { imageContainerOf, imageStructureProblem, jpegFrame, type ImageContainer } from '../core/image-structure.js';
import type { BlobStore } from './blobs.js';
import type { LinkSigner } from './links.js';

/** Image types every video vendor here takes as a reference frame. */
const IMAGE_TYPES: Record<string, { mime: string; ext: string; container: ImageContainer; label: string }> = {
  png: { mime: 'image/png', ext: 'png', container: 'png', label: 'PNG' },
  jpg: { mime: 'image/jpeg', ext: 'jpg', container: 'jpg', label: 'JPEG' },
  webp: { mime: 'image/webp', ext: 'webp', container: 'webp', label: 'WebP' },
};
/** Video inputs (see video-upload.ts), served back to the vendor under these types. */
const VIDEO_TYPES = [
  { mime: 'video/mp4', ext: 'mp4' },
  { mime: 'video/quicktime', ext: 'mov' },
  { mime: 'video/webm', ext: 'webm' },
];
const MIN_SIDE = 16;
const MAX_SIDE = 8192;

export interface CheckedUpload {
  mime: string;
  ext: string;
  width: number;
  height: number;
}

/**
 * What an uploaded file really is, from its bytes (the declared content type and file name are
 * the client's word, and are ignored): a whole PNG, JPEG or WebP image within sane dimensions.
 * Whole: its container's framing is complete (core/image-structure.ts), since the type and size
 * are read from the first bytes alone and a file cut short would otherwise reach the vendor.
 */
export function checkUpload(bytes: Buffer, param: string): CheckedUpload {
  if (bytes.length === 0) throw errors.invalidRequest(`'${param}' is an empty file.`, param, 'invalid_media');
  // The container is named from the first bytes and its framing checked (bounded work) before the
  // sniffer reads anything: on a JPEG the sniffer walks segments and, once out of step, the rest of
  // the file a byte at a time (over a second for 10 MB of crafted bytes), so a JPEG's size comes
  // from the frame header the check found instead.
  const container = imageContainerOf(bytes);
  const kind = container ? IMAGE_TYPES[container] : undefined;
  if (!kind) {
    const isVideo = bytes.length > 12 && bytes.subarray(4, 8).toString('latin1') === 'ftyp';
    throw errors.invalidRequest(
      isVideo
        ? `'${param}' looks like a video but could not be read as MP4, MOV or WebM.`
        : `'${param}' must be a PNG, JPEG or WebP image (the content was sniffed; the declared type does not count).`,
      param,
      'unsupported_media_type',
    );
  }
  const problem = imageStructureProblem(bytes, kind.container);
  if (problem) throw errors.invalidRequest(`'${param}' is not a whole ${kind.label} image: ${problem}.`, param, 'invalid_media');
  const { width, height } = dimensions(bytes, kind.container, param);
  if (width < MIN_SIDE || height < MIN_SIDE || width > MAX_SIDE || height > MAX_SIDE)
    throw errors.invalidRequest(`'${param}' is ${width}x${height}; each side must be between ${MIN_SIDE} and ${MAX_SIDE} pixels.`, param, 'invalid_media');
  return { mime: kind.mime, ext: kind.ext, width, height };
}

/** SOF0-2: baseline, extended and progressive Huffman coding, the JPEGs every vendor decodes. */
const TAKEN_JPEG_FRAMES = new Set([0xc0, 0xc1, 0xc2]);

/** The size of an image whose container is whole: a JPEG's from its frame header, the others' from their fixed headers. */
function dimensions(bytes: Buffer, container: ImageContainer, param: string): { width: number; height: number } {
  if (container === 'jpg') {
    const frame = jpegFrame(bytes);
    if (frame && TAKEN_JPEG_FRAMES.has(frame.marker)) return frame;
    throw errors.invalidRequest(
      `'${param}' is a lossless, hierarchical or arithmetic-coded JPEG; send a baseline or progressive JPEG, a PNG or a WebP image.`,
      param,
      'unsupported_media_type',
    );
  }
  let info: { width?: number; height?: number; type?: string } = {};
  try {
    info = imageSize(bytes);
  } catch {
    // Unreadable header: refused below.
  }
  if (info.type !== container)
    throw errors.invalidRequest(`'${param}' must be a PNG, JPEG or WebP image (the content was sniffed; the declared type does not count).`, param, 'unsupported_media_type');
  return { width: info.width ?? 0, height: info.height ?? 0 };
}

/**
 * Uploads live in the blob store under a random name inside the account's prefix. They are only
 * ever reachable through a signed, expiring gateway link (GET /uploads/{name}) that the gateway
 * hands to the vendor: no API key, of this account or another, can read them.
 */
export class Uploads {
  constructor(
    private readonly blobs: BlobStore,
    private readonly links: LinkSigner,
    private readonly publicUrl: () => string,
  ) {}

  async store(accountId: string, bytes: Buffer, checked: { mime: string; ext: string }): Promise<string> {
    const name = `uploads/${accountId.replace(/[^A-Za-z0-9_-]/g, '_')}/${randomBytes(18).toString('base64url')}.${checked.ext}`;
    await this.blobs.put(name, bytes, checked.mime);
    return name;
  }

  /** The link a vendor fetches the upload from. */
  url(name: string, now: number): string {
    const { expires, signature } = this.links.sign(`upload:${name}`, now);
    return `${this.publicUrl()}/${name}?expires=${expires}&signature=${signature}`;
  }

  verify(name: string, expires: unknown, signature: unknown, now: number): boolean {
    return /^uploads\/[A-Za-z0-9_-]+\/[A-Za-z0-9_-]+\.(png|jpg|webp|mp4|mov|webm)$/.test(name) && this.links.verify(`upload:${name}`, expires, signature, now);
  }

  mimeOf(name: string): string {
    const ext = name.slice(name.lastIndexOf('.') + 1);
    return [...Object.values(IMAGE_TYPES), ...VIDEO_TYPES].find((t) => t.ext === ext)?.mime ?? 'application/octet-stream';
  }

  async bytes(name: string): Promise<Buffer> {
    const stream = await this.blobs.open(name);
    if (!stream) throw errors.notFound('The upload is no longer available.', 'upload_not_found');
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }
}
