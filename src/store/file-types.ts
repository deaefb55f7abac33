/** A file uploaded through the OpenAI Files API (POST /v1/files), kept in the blob store. */
export interface FileRecord {
  id: string;
  accountId: string;
  purpose: string;
  filename: string;
  bytes: number;
  /** Sniffed from the bytes, never the client's word. */
  mime: string;
  /** The blob-store name of the bytes. */
  blob: string;
  createdAt: number;
  /** Removed (row and blob) at this time. */
  expiresAt: number;
}

export interface FileListOptions {
  after?: { createdAt: number; id: string };
  limit: number;
  order: 'asc' | 'desc';
  purpose?: string;
}

/** What an account's live (unexpired) files take: how many, and their bytes together. */
export interface FileUsage {
  files: number;
  bytes: number;
}

/** An account's storage bounds; 0 is no limit. */
export interface FileQuota {
  maxBytes: number;
  maxFiles: number;
}

/** Whether a file of `bytes` more fits beside `usage`. */
export function fitsQuota(usage: FileUsage, bytes: number, quota: FileQuota): boolean {
  if (quota.maxFiles > 0 && usage.files + 1 > quota.maxFiles) return false;
  return quota.maxBytes <= 0 || usage.bytes + bytes <= quota.maxBytes;
}

export type FileCreation = { created: true } | { created: false; usage: FileUsage };

export interface FileStore {
  /**
   * Records the file only when the account's live files, this one with them, stay within `quota`;
   * otherwise records nothing and answers the usage it found. Atomic per account: two creates at
   * once never both fit into the room that is there for one.
   */
  createFile(f: FileRecord, quota: FileQuota): Promise<FileCreation>;
  /** The account's live files at `now` (the ones not yet expired; expired ones no longer count). */
  fileUsage(accountId: string, now: number): Promise<FileUsage>;
  /** The file when it exists, belongs to `accountId` and has not expired. */
  getFile(id: string, accountId: string, now: number): Promise<FileRecord | undefined>;
  /** One page of the account's unexpired files, in (created_at, id) order. */
  listFiles(accountId: string, now: number, opts: FileListOptions): Promise<FileRecord[]>;
  /** Removes the row; false when there was none for that account. */
  deleteFile(id: string, accountId: string): Promise<boolean>;
  /** Files whose expiry has passed (their blobs still to remove), oldest first. */
  expiredFiles(now: number, limit: number): Promise<FileRecord[]>;
  /** Removes an expired file's row once its blob is gone. */
  forgetFile(id: string): Promise<void>;
}
