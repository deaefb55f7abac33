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

export interface FileStore {
  createFile(f: FileRecord): Promise<FileRecord>;
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
