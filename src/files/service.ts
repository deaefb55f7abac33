import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { AuthContext } from '../auth/types.js';
import type { Clock } from '../core/clock.js';
import { errors, type GatewayError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import { escapeMarkerLookalike } from '../core/lossless-json.js';
import { fitsQuota, type FileQuota, type FileRecord, type FileStore, type FileUsage } from '../store/file-types.js';
import type { BlobStore } from '../video/blobs.js';
import { imageTypeOf, MEDIA_HEAD_BYTES, sniffVideo } from '../core/sniff.js';

/** The purposes OpenAI's Files API takes; the gateway keeps them as labels (videos read any). */
export const FILE_PURPOSES = ['assistants', 'batch', 'fine-tune', 'vision', 'user_data', 'evals'] as const;
/** OpenAI's bounds for `expires_after.seconds`. */
const MIN_EXPIRY_S = 3_600;
const MAX_EXPIRY_S = 30 * 24 * 3_600;
const LIST_DEFAULT = 20;
const LIST_MAX = 10_000;

export interface FilesSettings {
  maxBytes: number;
  /** Kept this long unless the upload asks for less (`expires_after`). */
  retentionMs: number;
  /** What one account's live files may take together: bytes and files (0: no limit). */
  quota: FileQuota;
}

export interface NewFile {
  bytes: Buffer;
  filename: string;
  purpose: unknown;
  /** `expires_after` as sent: {anchor: 'created_at', seconds}. */
  expiresAfter?: unknown;
}

/**
 * A file's type, named by its first bytes: an image or video container the gateway knows, else
 * opaque bytes. Only the download's Content-Type is taken from it (served with nosniff), and a
 * create that uses the file checks its bytes in full then (video/uploads.ts), so nothing here walks
 * the file: a header sniffer that loses step in a JPEG reads the rest a byte at a time, seconds of
 * blocked event loop for a 64 MiB upload.
 */
function sniffMime(bytes: Buffer): string {
  const video = sniffVideo(bytes);
  if (video) return video.mime;
  return imageTypeOf(bytes.subarray(0, MEDIA_HEAD_BYTES)) ?? 'application/octet-stream';
}

/**
 * OpenAI's Files API, as far as its SDKs use it to hand a video create an `input_reference`
 * ({file_id}): upload, retrieve, list, delete, download. Files belong to the uploading account (a
 * file of another account is a 404, as if it did not exist), live in the blob store, and are
 * removed at their expiry (the configured retention, or a shorter `expires_after`).
 */
export class FilesService {
  constructor(
    private readonly store: FileStore,
    private readonly blobs: BlobStore,
    private readonly clock: Clock,
    readonly settings: FilesSettings,
  ) {}

  async create(ctx: AuthContext, f: NewFile): Promise<JsonObject> {
    if (typeof f.purpose !== 'string' || f.purpose === '')
      throw errors.invalidRequest("'purpose' is required.", 'purpose', 'missing_required_parameter');
    if (!(FILE_PURPOSES as readonly string[]).includes(f.purpose))
      throw errors.invalidRequest(`'purpose' must be one of ${FILE_PURPOSES.join(', ')}.`, 'purpose');
    if (f.bytes.length === 0) throw errors.invalidRequest("'file' is empty.", 'file', 'invalid_media');
    const now = this.clock.now();
    const expiresAt = now + this.lifetimeMs(f.expiresAfter);
    // Nothing is written for an upload the account has no room for...
    const usage = await this.store.fileUsage(ctx.account.id, now);
    if (!fitsQuota(usage, f.bytes.length, this.settings.quota)) throw this.quotaRefusal(usage, f.bytes.length);
    const id = `file-${randomBytes(18).toString('base64url')}`;
    const blob = `files/${ctx.account.id.replace(/[^A-Za-z0-9_-]/g, '_')}/${id}`;
    const mime = sniffMime(f.bytes);
    await this.blobs.put(blob, f.bytes, mime);
    // The name is shown back as sent, never taken for a number marker (core/lossless-json.ts): it is
    // escaped after the cleaning, which could otherwise bare a marker (`\x01\uE000num:5` was 5).
    const filename = escapeMarkerLookalike(f.filename.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, 255) || 'file');
    const rec: FileRecord = { id, accountId: ctx.account.id, purpose: f.purpose, filename, bytes: f.bytes.length, mime, blob, createdAt: now, expiresAt };
    try {
      // ...and the check above is only a first look: uploads of the account running at once all
      // pass it. The row is recorded under the account's lock, against the usage read under it
      // (store/files.ts), so the recorded files never exceed the quota, however many uploads race;
      // the loser's blob is removed. What the race can add on disk is the blobs of the uploads in
      // flight, for the moment between their write and this refusal: each at most max_bytes, and
      // all of them held first in memory, within server.max_inflight_body_bytes.
      const made = await this.store.createFile(rec, this.settings.quota);
      if (!made.created) throw this.quotaRefusal(made.usage, rec.bytes);
      return present(rec);
    } catch (e) {
      await this.blobs.delete(blob).catch(() => undefined);
      throw e;
    }
  }

  /**
   * Refuses an upload, before its body is read, when the account has no room for even one byte or
   * one more file: no amount of uploading could then be stored.
   */
  async refuseWhenFull(ctx: AuthContext): Promise<void> {
    const usage = await this.store.fileUsage(ctx.account.id, this.clock.now());
    if (!fitsQuota(usage, 1, this.settings.quota)) throw this.quotaRefusal(usage, undefined);
  }

  private quotaRefusal(usage: FileUsage, adding: number | undefined): GatewayError {
    const { maxBytes, maxFiles } = this.settings.quota;
    const freeUp = 'Delete files (or wait for them to expire) to upload more.';
    if (maxFiles > 0 && usage.files >= maxFiles)
      return errors.storageQuotaExceeded(`The account keeps ${usage.files} files, the most it may keep (${maxFiles}). ${freeUp}`);
    const upload = adding === undefined ? 'no upload fits' : `this upload of ${adding} bytes does not fit`;
    return errors.storageQuotaExceeded(`The account's files take ${usage.bytes} of its ${maxBytes} bytes of storage: ${upload}. ${freeUp}`);
  }

  private lifetimeMs(expiresAfter: unknown): number {
    if (expiresAfter === undefined || expiresAfter === null) return this.settings.retentionMs;
    const e = expiresAfter as { anchor?: unknown; seconds?: unknown };
    if (typeof expiresAfter !== 'object' || e.anchor !== 'created_at')
      throw errors.invalidRequest("'expires_after' must be {anchor: 'created_at', seconds}.", 'expires_after.anchor');
    const s = typeof e.seconds === 'string' && /^\d+$/.test(e.seconds) ? Number(e.seconds) : e.seconds;
    if (typeof s !== 'number' || !Number.isInteger(s) || s < MIN_EXPIRY_S || s > MAX_EXPIRY_S)
      throw errors.invalidRequest(`'expires_after.seconds' must be an integer from ${MIN_EXPIRY_S} to ${MAX_EXPIRY_S}.`, 'expires_after.seconds');
    return Math.min(s * 1000, this.settings.retentionMs);
  }

  async record(accountId: string, id: unknown): Promise<FileRecord> {
    const rec = typeof id === 'string' && /^file-[A-Za-z0-9_-]{1,64}$/.test(id) ? await this.store.getFile(id, accountId, this.clock.now()) : undefined;
    if (!rec) throw errors.notFound(`No file '${String(id).slice(0, 80)}' (unknown, expired, deleted, or another account's).`, 'file_not_found');
    return rec;
  }

  async get(ctx: AuthContext, id: string): Promise<JsonObject> {
    return present(await this.record(ctx.account.id, id));
  }

  async list(ctx: AuthContext, q: { after?: string; limit?: string; order?: string; purpose?: string }): Promise<JsonObject> {
    const order = q.order ?? 'desc';
    if (order !== 'asc' && order !== 'desc') throw errors.invalidRequest("'order' must be 'asc' or 'desc'.", 'order');
    const limit = q.limit === undefined ? LIST_DEFAULT : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > LIST_MAX) throw errors.invalidRequest(`'limit' must be an integer from 1 to ${LIST_MAX}.`, 'limit');
    let after: { createdAt: number; id: string } | undefined;
    if (q.after !== undefined && q.after !== '') {
      const rec = await this.store.getFile(q.after, ctx.account.id, 0);
      if (!rec) throw errors.invalidRequest("'after' is not the id of one of your files.", 'after', 'invalid_cursor');
      after = { createdAt: rec.createdAt, id: rec.id };
    }
    const rows = await this.store.listFiles(ctx.account.id, this.clock.now(), { after, limit: limit + 1, order, purpose: q.purpose });
    const data = rows.slice(0, limit).map(present);
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null, has_more: rows.length > limit };
  }

  async delete(ctx: AuthContext, id: string): Promise<JsonObject> {
    const rec = await this.record(ctx.account.id, id);
    // The bytes first, as in purgeExpired: if removing them fails the file is still listed and the
    // client's retry removes both, where a row removed first would leave bytes no one can reach or purge.
    await this.blobs.delete(rec.blob);
    if (!(await this.store.deleteFile(rec.id, ctx.account.id))) throw errors.notFound(`No file '${id}'.`, 'file_not_found');
    return { id: rec.id, object: 'file', deleted: true };
  }

  async content(ctx: AuthContext, id: string): Promise<{ headers: Record<string, string>; body: Readable }> {
    const rec = await this.record(ctx.account.id, id);
    const body = await this.blobs.open(rec.blob);
    if (!body) throw errors.notFound(`The content of file '${id}' is no longer available.`, 'file_not_found');
    return { headers: { 'content-type': rec.mime, 'content-length': String(rec.bytes) }, body };
  }

  /**
   * The bytes of one of the account's files: its recorded size (what a caller budgets for), read
   * into one buffer of that size rather than chunks and then a copy of them all.
   */
  async bytes(rec: FileRecord): Promise<Buffer> {
    const body = await this.blobs.open(rec.blob);
    if (!body) throw errors.notFound(`The content of file '${rec.id}' is no longer available.`, 'file_not_found');
    const out = Buffer.allocUnsafe(rec.bytes);
    let size = 0;
    for await (const c of body) {
      const chunk = c as Buffer;
      // Files are written once; a blob that grew is not the file recorded.
      if (size + chunk.length > out.length) {
        body.destroy();
        throw errors.internal();
      }
      chunk.copy(out, size);
      size += chunk.length;
    }
    return size === out.length ? out : out.subarray(0, size);
  }

  /** Removes expired files (blob first, then the row); run by the background refresher. */
  async purgeExpired(batch: number): Promise<number> {
    const due = await this.store.expiredFiles(this.clock.now(), batch);
    for (const f of due) {
      await this.blobs.delete(f.blob);
      await this.store.forgetFile(f.id);
    }
    return due.length;
  }
}

/** The FileObject of openai-node's resources/files.ts. */
function present(f: FileRecord): JsonObject {
  return {
    id: f.id,
    object: 'file',
    bytes: f.bytes,
    created_at: Math.floor(f.createdAt / 1000),
    expires_at: Math.floor(f.expiresAt / 1000),
    filename: f.filename,
    purpose: f.purpose,
    status: 'processed',
  };
}
