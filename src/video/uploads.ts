import { randomBytes } from 'node:crypto';
import { imageSize } from 'image-size';
import { errors } from '../core/errors.js';
import { imageStructureProblem, type ImageContainer } from '../core/image-structure.js';
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
  let info: { width?: number; height?: number; type?: string };
  try {
    info = imageSize(bytes);
  } catch {
    info = {};
  }
  const kind = info.type ? IMAGE_TYPES[info.type] : undefined;
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
  const { width = 0, height = 0 } = info;
  if (width < MIN_SIDE || height < MIN_SIDE || width > MAX_SIDE || height > MAX_SIDE)
    throw errors.invalidRequest(`'${param}' is ${width}x${height}; each side must be between ${MIN_SIDE} and ${MAX_SIDE} pixels.`, param, 'invalid_media');
  return { mime: kind.mime, ext: kind.ext, width, height };
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
