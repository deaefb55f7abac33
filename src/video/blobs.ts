import { mkdirSync } from 'node:fs';
import { mkdir, open, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { guard } from '../http/streams.js';

/**
 * Bytes the gateway keeps itself: client uploads (reference images) and videos that vendors return
 * inline. One interface, two implementations: a local directory (the embedded default, one
 * instance) and S3-compatible object storage (several instances share it, so any instance can
 * serve any job). Names are opaque paths chosen by the gateway (`[A-Za-z0-9_./-]`).
 */
export interface BlobStore {
  put(name: string, bytes: Buffer, contentType: string): Promise<{ name: string; size: number }>;
  /** Size in bytes, or undefined when there is no such blob. */
  size(name: string): Promise<number | undefined>;
  /**
   * The bytes, `start`..`end` inclusive when given, or undefined when the blob is gone. The blob is
   * opened before the stream exists, so a missing one is an answer (404) instead of an error event
   * after the headers.
   */
  open(name: string, start?: number, end?: number): Promise<Readable | undefined>;
  /** Removing a blob that is already gone is not an error. */
  delete(name: string): Promise<void>;
}

/** Anything outside the safe alphabet, and any attempt to climb out of the store, becomes `_`. */
export function safeBlobName(name: string): string {
  return name
    .replace(/[^A-Za-z0-9_./-]/g, '_')
    .split('/')
    .filter((p) => p !== '' && p !== '.' && p !== '..')
    .join('/');
}

export class LocalBlobStore implements BlobStore {
  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  async put(name: string, bytes: Buffer): Promise<{ name: string; size: number }> {
    const safe = safeBlobName(name);
    const path = join(this.dir, safe);
    await mkdir(dirname(path), { recursive: true });
    // Written aside and renamed: a reader never sees half a file.
    const tmp = `${path}.tmp-${process.pid}`;
    await writeFile(tmp, bytes);
    await rename(tmp, path);
    return { name: safe, size: bytes.length };
  }

  async size(name: string): Promise<number | undefined> {
    try {
      return (await stat(join(this.dir, safeBlobName(name)))).size;
    } catch {
      return undefined;
    }
  }

  async open(name: string, start?: number, end?: number): Promise<Readable | undefined> {
    let handle;
    try {
      handle = await open(join(this.dir, safeBlobName(name)), 'r');
    } catch {
      return undefined;
    }
    // autoClose (the default) closes the file when the stream ends, fails or is destroyed.
    return guard(handle.createReadStream({ start, end }));
  }

  async delete(name: string): Promise<void> {
    await rm(join(this.dir, safeBlobName(name)), { force: true });
  }
}
