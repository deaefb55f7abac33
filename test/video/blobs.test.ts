import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalBlobStore, type BlobStore } from '../../src/video/blobs.js';
import { S3BlobStore } from '../../src/video/blobs-s3.js';
import { startLocalS3, type LocalS3 } from '../helpers/s3.js';

/** One contract, both implementations: the local directory and S3 (s3rver on loopback). */
let s3: LocalS3;
let dir: string;
const stores: Record<string, () => BlobStore> = {};

beforeAll(async () => {
  s3 = await startLocalS3();
  dir = mkdtempSync(join(tmpdir(), 'gw-blobs-'));
  stores.local = () => new LocalBlobStore(dir);
  stores.s3 = () => {
    const c = s3.config('contract/') as Record<string, string | boolean>;
    return new S3BlobStore({
      bucket: String(c.bucket), prefix: String(c.prefix), endpoint: String(c.endpoint), region: 'us-east-1', forcePathStyle: true,
      accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER',
    });
  };
});
afterAll(async () => {
  await s3?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function read(stream: Readable | undefined): Promise<Buffer> {
  if (!stream) throw new Error('no stream');
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe.each(['local', 's3'])('blob store: %s', (kind) => {
  it('stores, sizes, reads whole and by range, and deletes (twice is fine)', async () => {
    const store = stores[kind]!();
    const bytes = Buffer.from(Array.from({ length: 3000 }, (_, i) => i % 251));
    const put = await store.put('uploads/acct/a b.png', bytes, 'image/png');
    expect(put).toEqual({ name: 'uploads/acct/a_b.png', size: 3000 });
    expect(await store.size(put.name)).toBe(3000);
    expect((await read(await store.open(put.name))).equals(bytes)).toBe(true);
    expect((await read(await store.open(put.name, 100, 199))).equals(bytes.subarray(100, 200))).toBe(true);
    await store.delete(put.name);
    await store.delete(put.name);
    expect(await store.size(put.name)).toBeUndefined();
    expect(await store.open(put.name)).toBeUndefined();
  });

  it('never leaves its root: dot segments are dropped from names', async () => {
    const store = stores[kind]!();
    const put = await store.put('../../etc/../x.bin', Buffer.from('x'), 'application/octet-stream');
    expect(put.name).toBe('etc/x.bin');
    expect(await store.size('etc/x.bin')).toBe(1);
  });
});

describe('S3 blob store failures', () => {
  it('reads whose bodies nobody consumes cannot hold every S3 connection: idle ones are cut and others go on', async () => {
    const c = s3.config('stalled/') as Record<string, string>;
    const store = new S3BlobStore({
      bucket: c.bucket!, prefix: c.prefix!, endpoint: c.endpoint!, region: 'us-east-1', forcePathStyle: true,
      accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', idleTimeoutMs: 500,
    });
    try {
      await store.put('big', Buffer.alloc(8 * 1024 * 1024, 1), 'application/octet-stream');
      await store.put('small', Buffer.from('hi'), 'text/plain');
      // As many reads as the client keeps connections, each left unread (a download whose client stopped reading).
      const stalled = await Promise.all(Array.from({ length: 50 }, () => store.open('big')));
      for (const s of stalled) s!.on('error', () => undefined);
      const answer = await Promise.race([store.size('small'), new Promise((r) => setTimeout(() => r('still waiting'), 5_000))]);
      expect(answer).toBe(2);
      for (const s of stalled) s!.destroy();
    } finally {
      store.close();
    }
  }, 20_000);


  it('a stopped S3 server is an error, not a missing blob', async () => {
    const other = await startLocalS3('gone');
    const c = other.config('p/') as Record<string, string>;
    const store = new S3BlobStore({ bucket: 'gone', prefix: 'p/', endpoint: c.endpoint!, region: 'us-east-1', forcePathStyle: true, accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
    await other.close();
    await expect(store.size('x')).rejects.toThrow();
    await expect(store.open('x')).rejects.toThrow();
    store.close();
  });
});
