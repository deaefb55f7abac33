import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import { guard } from '../http/streams.js';
import { safeBlobName, type BlobStore } from './blobs.js';

export interface S3BlobSettings {
  bucket: string;
  /** Key prefix inside the bucket, e.g. "gateway/" (several gateways can share a bucket). */
  prefix: string;
  /** S3-compatible endpoint (MinIO, R2, a local test server); AWS when absent. */
  endpoint?: string;
  region: string;
  /** Path-style addressing (bucket in the path), which most S3-compatible servers need. */
  forcePathStyle: boolean;
  accessKeyId?: string;
  secretAccessKey?: string;
  /** How long an S3 connection may sit without a byte either way before it is given up (IDLE_TIMEOUT_MS). */
  idleTimeoutMs?: number;
}

/**
 * The S3 client keeps at most 50 connections, and a read holds one until its body is consumed. A
 * download whose client stops reading stops our reading too, so without a bound 50 such clients (of
 * any accounts) would hold every connection and stall every blob read and write of the process. An
 * idle connection is therefore cut: the stalled download ends (as for an upstream that stalls) and
 * its connection is free again.
 */
const IDLE_TIMEOUT_MS = 60_000;

const isMissing = (e: unknown) =>
  e instanceof S3ServiceException && (e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata.httpStatusCode === 404);

/** Blobs in an S3-compatible bucket: every gateway instance reads what any other one wrote. */
export class S3BlobStore implements BlobStore {
  private readonly client: S3Client;

  constructor(private readonly s: S3BlobSettings) {
    this.client = new S3Client({
      region: s.region,
      endpoint: s.endpoint,
      forcePathStyle: s.forcePathStyle,
      requestHandler: { socketTimeout: s.idleTimeoutMs ?? IDLE_TIMEOUT_MS },
      // Explicit keys when configured; otherwise the SDK's own chain (environment, instance role).
      ...(s.accessKeyId && s.secretAccessKey ? { credentials: { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey } } : {}),
    });
  }

  private key(name: string): string {
    return `${this.s.prefix}${safeBlobName(name)}`;
  }

  async put(name: string, bytes: Buffer, contentType: string): Promise<{ name: string; size: number }> {
    const safe = safeBlobName(name);
    await this.client.send(new PutObjectCommand({ Bucket: this.s.bucket, Key: this.key(safe), Body: bytes, ContentType: contentType }));
    return { name: safe, size: bytes.length };
  }

  async size(name: string): Promise<number | undefined> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.s.bucket, Key: this.key(name) }));
      return head.ContentLength;
    } catch (e) {
      if (isMissing(e)) return undefined;
      throw e;
    }
  }

  async open(name: string, start?: number, end?: number): Promise<Readable | undefined> {
    const range = start !== undefined ? `bytes=${start}-${end ?? ''}` : undefined;
    let body: unknown;
    try {
      body = (await this.client.send(new GetObjectCommand({ Bucket: this.s.bucket, Key: this.key(name), Range: range }))).Body;
    } catch (e) {
      if (isMissing(e)) return undefined;
      throw e;
    }
    if (body instanceof Readable) return guard(body);
    // Not Node's stream type (other runtimes): adapt the web stream.
    return guard(Readable.fromWeb((body as { transformToWebStream(): ReadableStream }).transformToWebStream() as never));
  }

  async delete(name: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.s.bucket, Key: this.key(name) }));
  }

  close(): void {
    this.client.destroy();
  }
}
