import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlStore } from '../../src/store/index.js';
import type { FileQuota, FileRecord } from '../../src/store/file-types.js';
import { makeAccount, postgresBackend, sqliteBackend, T0, uid, type Backend } from './harness.js';

/**
 * An account's Files API uploads are recorded only within its storage quota (bytes of its live
 * files together, and how many), checked and written as one step per account: uploads racing
 * each other never record more than the quota, on either engine. Deleted and expired files no
 * longer count.
 */
const DAY = 24 * 3_600_000;

function file(accountId: string, bytes: number, over: Partial<FileRecord> = {}): FileRecord {
  const id = uid('file');
  return { id, accountId, purpose: 'vision', filename: 'f.png', bytes, mime: 'image/png', blob: `files/${accountId}/${id}`, createdAt: T0, expiresAt: T0 + DAY, ...over };
}

function quotaCases(name: string, make: () => Backend): void {
  describe(`file storage quota: ${name}`, () => {
    let backend: Backend;
    let store: SqlStore;
    beforeAll(async () => {
      backend = make();
      store = (await backend.fresh()).store;
    });
    afterAll(async () => {
      await backend?.dispose();
    });

    it('records files while they fit, then refuses with the usage it found', async () => {
      const { id } = await makeAccount(store);
      const quota: FileQuota = { maxBytes: 1_000, maxFiles: 10 };
      expect(await store.createFile(file(id, 600), quota)).toEqual({ created: true });
      expect(await store.createFile(file(id, 400), quota)).toEqual({ created: true });
      expect(await store.createFile(file(id, 1), quota)).toEqual({ created: false, usage: { files: 2, bytes: 1_000 } });
      expect(await store.fileUsage(id, T0)).toEqual({ files: 2, bytes: 1_000 });
      // Another account's quota is its own.
      const other = await makeAccount(store);
      expect(await store.createFile(file(other.id, 1_000), quota)).toEqual({ created: true });
    });

    it('refuses one file more than the count allows, whatever its size; 0 is no limit', async () => {
      const { id } = await makeAccount(store);
      for (let i = 0; i < 3; i++) expect((await store.createFile(file(id, 1), { maxBytes: 0, maxFiles: 3 })).created).toBe(true);
      expect(await store.createFile(file(id, 1), { maxBytes: 0, maxFiles: 3 })).toEqual({ created: false, usage: { files: 3, bytes: 3 } });
      expect((await store.createFile(file(id, 1), { maxBytes: 0, maxFiles: 0 })).created).toBe(true);
    });

    it('frees the room of a deleted file and of an expired one', async () => {
      const { id } = await makeAccount(store);
      const quota: FileQuota = { maxBytes: 100, maxFiles: 2 };
      const short = file(id, 50, { expiresAt: T0 + 3_600_000 });
      const kept = file(id, 50);
      expect((await store.createFile(short, quota)).created).toBe(true);
      expect((await store.createFile(kept, quota)).created).toBe(true);
      expect((await store.createFile(file(id, 50), quota)).created).toBe(false);

      // Past its expiry the first no longer counts, though the refresher has not removed it yet.
      const later = T0 + 3_600_000;
      expect(await store.fileUsage(id, later)).toEqual({ files: 1, bytes: 50 });
      expect((await store.createFile(file(id, 50, { createdAt: later, expiresAt: later + DAY }), quota)).created).toBe(true);
      expect((await store.createFile(file(id, 1, { createdAt: later, expiresAt: later + DAY }), quota)).created).toBe(false);

      expect(await store.deleteFile(kept.id, id)).toBe(true);
      expect(await store.fileUsage(id, later)).toEqual({ files: 1, bytes: 50 });
      expect((await store.createFile(file(id, 50, { createdAt: later, expiresAt: later + DAY }), quota)).created).toBe(true);
    });

    it('never records more than the quota for uploads racing each other', async () => {
      const { id } = await makeAccount(store);
      // Each fits alone; together they are four times the quota.
      const quota: FileQuota = { maxBytes: 1_000, maxFiles: 0 };
      const results = await Promise.all(Array.from({ length: 16 }, () => store.createFile(file(id, 250), quota)));
      expect(results.filter((r) => r.created)).toHaveLength(4);
      expect(await store.fileUsage(id, T0)).toEqual({ files: 4, bytes: 1_000 });

      const counted = await makeAccount(store);
      const byCount = await Promise.all(Array.from({ length: 16 }, () => store.createFile(file(counted.id, 1), { maxBytes: 0, maxFiles: 5 })));
      expect(byCount.filter((r) => r.created)).toHaveLength(5);
      expect((await store.fileUsage(counted.id, T0)).files).toBe(5);
    });
  });
}

quotaCases('sqlite', sqliteBackend);
quotaCases('postgres', postgresBackend);
