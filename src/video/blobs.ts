import { createReadStream, mkdirSync, statSync } from 'node:fs';
import { writeFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';

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

  open(name: string, start?: number, end?: number): Readable {
    return createReadStream(join(this.dir, name), { start, end });
  }
}
