import { mkdirSync, statSync } from 'node:fs';
import { open, writeFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { guard } from '../http/streams.js';

/**
 * Local copies of videos that vendors return inline (base64 in the poll answer): written once at
 * completion, then served with Range support like any other source.
 */
export class BlobStore {
  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  async put(name: string, base64: string): Promise<{ path: string; size: number }> {
    const safe = name.replace(/[^A-Za-z0-9_.-]/g, '_');
    const path = join(this.dir, safe);
    const bytes = Buffer.from(base64, 'base64');
    const tmp = `${path}.tmp-${process.pid}`;
    await writeFile(tmp, bytes);
    await rename(tmp, path);
    return { path: safe, size: bytes.length };
  }

  size(name: string): number | undefined {
    try {
      return statSync(join(this.dir, name)).size;
    } catch {
      return undefined;
    }
  }

  /**
   * A stream of the stored bytes, or undefined when the file is gone. The file is opened before the
   * stream exists, so a missing file is an answer (404) instead of an error event after the headers.
   */
  async open(name: string, start?: number, end?: number): Promise<Readable | undefined> {
    let handle;
    try {
      handle = await open(join(this.dir, name), 'r');
    } catch {
      return undefined;
    }
    // autoClose (the default) closes the file when the stream ends, fails or is destroyed.
    return guard(handle.createReadStream({ start, end }));
  }
}
