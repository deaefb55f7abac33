import { closeSync, constants, ftruncateSync, lstatSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import type { Dispatcher } from 'undici';
import { LARGEST_VIDEO_BYTES } from '../../video/largest-video.js';
import { CliError, EXIT } from '../exit.js';
import type { ApiClient } from './api.js';
import { byteProgress, type ByteProgress } from './progress.js';
import { sleep, type ClientTiming } from './timing.js';

export interface DownloadResult {
  path: string;
  bytes: number;
  /** Range requests that continued a partial file (from an earlier run or a cut in this one). */
  resumes: number;
}

/**
 * What a partial file holds: the bytes of this job's output, of this total size, as the server
 * described them. Kept beside the partial file (`out.part.json`) so that a later run resumes only
 * a file it can tell is the same one; a partial file without it, or of another video, starts over.
 */
interface Source {
  job: string;
  index: number;
  total?: number;
  etag?: string;
  lastModified?: string;
}

/** "bytes 100-999/1000" -> {start: 100, total: 1000}; "bytes *\/1000" -> {total: 1000}. */
function contentRange(h: string | string[] | undefined): { start?: number; total?: number } {
  const m = /^bytes (?:(\d+)-\d+|\*)\/(\d+|\*)$/.exec(String(h ?? '').trim());
  if (!m) return {};
  return { start: m[1] === undefined ? undefined : Number(m[1]), total: m[2] === '*' ? undefined : Number(m[2]) };
}

const header = (res: Dispatcher.ResponseData, name: string) => {
  const v = res.headers[name];
  return typeof v === 'string' ? v : undefined;
};

/**
 * A body without an announced size that went past `--max-bytes`. Its bytes have no record (there
 * is no total a later run could check them against, see writeRecord), so no run would continue
 * them: they are removed rather than left to fill the disk.
 */
class OverMaxBytes extends CliError {}

/** A local file operation, its failure one line naming the path. */
function onDisk<T>(path: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw new CliError(`cannot write ${path}: ${(e as Error).message}`, EXIT.failure);
  }
}

/** The file's status, or undefined when there is none (following a symbolic link, or not). */
const statOf = (p: string) => statSync(p, { throwIfNoEntry: false });
const lstatOf = (p: string) => lstatSync(p, { throwIfNoEntry: false });

/** The source a partial file belongs to, when its record is there, readable and of this job. */
function recordedSource(meta: string, job: string, index: number): Source | undefined {
  try {
    const s = JSON.parse(readFileSync(meta, 'utf8')) as Source;
    return s.job === job && s.index === index && Number.isSafeInteger(s.total) ? s : undefined;
  } catch {
    return undefined;
  }
}

/** Whether an answer to a Range request continues `src` at `offset`: same start, total and validators. */
function continues(res: Dispatcher.ResponseData, src: Source, offset: number): boolean {
  const { start, total } = contentRange(res.headers['content-range']);
  const etag = header(res, 'etag');
  const modified = header(res, 'last-modified');
  return start === offset && total === src.total && (!src.etag || etag === src.etag) && (!src.lastModified || modified === src.lastModified);
}

/**
 * Downloads a video's content to `out`. Bytes go to `out.part` first and the file is renamed only
 * once complete and of the size the server announced; a cut connection (here or in an earlier run)
 * continues with a Range request from the bytes already on disk, once the answer is shown to be
 * the same video (see Source). An `out` that is not a regular file (a FIFO, /dev/stdout) is
 * written directly: renaming over it would replace the device or pipe with a file.
 *
 * A body whose size the server does not announce (no Content-Length: the gateway always gives one
 * for a copy it stores, so only a vendor's unannounced stream, a broken proxy or a hostile server
 * sends none) is written up to `maxBytes` (default LARGEST_VIDEO_BYTES) and no further; one that
 * announces more than `maxBytes` is refused before anything is written.
 */
export async function downloadVideo(
  api: ApiClient,
  id: string,
  out: string,
  opts: { index?: number; maxBytes?: number; timing: ClientTiming; progress?: ByteProgress },
): Promise<DownloadResult> {
  const index = opts.index ?? 0;
  const maxBytes = opts.maxBytes ?? LARGEST_VIDEO_BYTES;
  const path = `/v1/videos/${encodeURIComponent(id)}/content${opts.index ? `?index=${opts.index}` : ''}`;
  const progress = opts.progress ?? byteProgress('download');
  const existing = onDisk(out, () => statOf(out));
  const direct = existing !== undefined && !existing.isFile();
  const part = direct ? out : `${out}.part`;
  const meta = `${out}.part.json`;

  // What is on disk already, kept only when its record says it is this video.
  let src: Source | undefined;
  let offset = 0;
  if (!direct) {
    const stat = onDisk(out, () => lstatOf(part));
    if (stat && !stat.isFile()) throw new CliError(`${part} is not a regular file; remove it and try again`, EXIT.failure);
    src = stat ? recordedSource(meta, id, index) : undefined;
    offset = src && stat ? stat.size : 0;
  }
  let fd: number | undefined;
  /** The file, opened on the first answer worth writing (a 404 leaves nothing behind), cut to `offset`. */
  const file = (): number => {
    fd ??= onDisk(out, () => openSync(part, direct ? 'w' : constants.O_WRONLY | constants.O_CREAT, 0o666));
    if (!direct) onDisk(out, () => ftruncateSync(fd!, offset));
    return fd;
  };
  /** What is on disk is not continued: the file starts again from its first byte. */
  const restart = () => {
    if (direct && offset > 0) throw new CliError(`the server did not continue the download, and ${out} is not a regular file to start again`, EXIT.failure);
    offset = 0;
    src = undefined;
  };

  let resumes = 0;
  try {
    for (let attempt = 0; ; attempt++) {
      const res = await api.open(path, offset > 0 && src ? rangeHeaders(src, offset) : {});
      let write = true;
      try {
        if (res.statusCode === 416) {
          // Nothing past `offset`: done when that is this video's announced size.
          if (src && contentRange(res.headers['content-range']).total === offset && src.total === offset) {
            await res.body.dump();
            break;
          }
          restart();
          await res.body.dump();
          write = false;
        } else if (res.statusCode === 206) {
          // Spliced on only when it is the continuation asked for, of the same video.
          if (offset > 0 && src && continues(res, src, offset)) resumes++;
          else {
            restart();
            await res.body.dump();
            write = false;
          }
        } else {
          // The whole video from its first byte: the file starts over (cut first, so that the
          // record never describes older bytes), then its record.
          restart();
          const length = Number(header(res, 'content-length'));
          src = { job: id, index, total: Number.isSafeInteger(length) && length >= 0 ? length : undefined, etag: header(res, 'etag'), lastModified: header(res, 'last-modified') };
          file();
          if (!direct) writeRecord(meta, src);
        }
      } catch (e) {
        // A local failure before the body is read: the connection is let go, not left open.
        res.body.destroy();
        throw e;
      }
      if (!write) {
        if (attempt >= opts.timing.downloadRetries) throw new CliError(`the server did not send ${out} consistently; giving up`, EXIT.failure);
        continue;
      }
      const total = src!.total;
      if (total !== undefined && total > maxBytes) {
        // A size past the bound is refused before a byte of it is written: announced or not, it
        // would fill the disk all the same. Nothing of it is kept (a part begun under a larger bound stays).
        res.body.destroy();
        if (!direct && offset === 0) onDisk(out, () => [part, meta].forEach((f) => rmSync(f, { force: true })));
        throw new CliError(`the server announced ${total} bytes, more than --max-bytes (${maxBytes}); not downloading`, EXIT.failure);
      }
      progress.start(total, offset);
      let cut: Error | undefined;
      try {
        ({ offset, cut } = await appendBody(res, file(), offset, total === undefined ? { bytes: maxBytes, announced: false } : { bytes: total, announced: true }, direct, out, progress));
      } catch (e) {
        if (e instanceof OverMaxBytes && !direct) onDisk(out, () => rmSync(part, { force: true }));
        throw e;
      } finally {
        progress.stop();
      }
      if (!cut && (total === undefined || offset === total)) break;
      if (attempt >= opts.timing.downloadRetries) {
        const why = cut?.message ?? `the body ended at ${offset} of ${total} bytes`;
        throw new CliError(`download interrupted at ${offset} bytes (${why}); run the same command again to resume`, EXIT.failure);
      }
      await sleep(opts.timing.backoffMs * 2 ** Math.min(attempt, 3));
    }
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  if (direct) return { path: out, bytes: offset, resumes };
  const size = onDisk(out, () => statSync(part).size);
  if (src?.total !== undefined && size !== src.total) throw new CliError(`${part} holds ${size} bytes, not the ${src.total} the server announced`, EXIT.failure);
  // Checked again just before: what appeared at `out` meanwhile is not replaced unless it is a file.
  const now = onDisk(out, () => statOf(out));
  if (now && !now.isFile()) throw new CliError(`${out} is not a regular file; not replacing it (the video is in ${part})`, EXIT.failure);
  onDisk(out, () => renameSync(part, out));
  rmSync(meta, { force: true });
  return { path: out, bytes: size, resumes };
}

/** A Range request from `offset`, conditional on the validator the server gave, where it gave one. */
function rangeHeaders(src: Source, offset: number): Record<string, string> {
  const validator = src.etag && !src.etag.startsWith('W/') ? src.etag : src.lastModified;
  return { range: `bytes=${offset}-`, ...(validator ? { 'if-range': validator } : {}) };
}

/** The record of a fresh download; without a total there is nothing a later run could check, so none. */
function writeRecord(meta: string, src: Source): void {
  onDisk(meta, () => (src.total === undefined ? rmSync(meta, { force: true }) : writeFileSync(meta, `${JSON.stringify(src)}\n`)));
}

/**
 * Writes each chunk to disk as it arrives (flowing mode, synchronous writes: nothing waits in a
 * buffer), so that when the connection is cut everything that arrived is on disk and the next
 * Range request starts exactly there. Answers the new offset, and the error when the body was cut
 * short. A write that fails (a full disk) ends the download with a CliError: trying again would
 * not help; nor would it with a server sending past the total it announced, or, when it announced
 * none, past `maxBytes` (checked before the chunk that would cross it is written).
 */
async function appendBody(
  res: Dispatcher.ResponseData,
  fd: number,
  from: number,
  limit: { bytes: number; announced: boolean },
  direct: boolean,
  out: string,
  progress: ByteProgress,
): Promise<{ offset: number; cut?: Error }> {
  let offset = from;
  let failed: CliError | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      res.body.on('data', (chunk: Buffer) => {
        if (offset + chunk.length > limit.bytes) {
          const kept = direct ? `${offset} bytes were written to ${out}` : 'the partial file was removed';
          failed = limit.announced
            ? new CliError(`the server sent more than the ${limit.bytes} bytes it announced for ${out}`, EXIT.failure)
            : new OverMaxBytes(`the server sent more than ${limit.bytes} bytes for ${out} without announcing a size; stopped (${kept}; --max-bytes allows more)`, EXIT.failure);
          return res.body.destroy(failed);
        }
        try {
          writeSync(fd, chunk, 0, chunk.length, direct ? null : offset);
        } catch (e) {
          failed = new CliError(`cannot write ${out}: ${(e as Error).message}`, EXIT.failure);
          return res.body.destroy(failed);
        }
        offset += chunk.length;
        progress.advance(chunk.length);
      });
      res.body.once('end', resolve);
      res.body.once('error', reject);
      // Closed without 'end' (destroyed without an error): incomplete. After 'end' this is a no-op.
      res.body.once('close', () => reject(new Error('the connection closed before the end of the body')));
    });
    return { offset };
  } catch (e) {
    if (failed) throw failed;
    return { offset, cut: e as Error };
  } finally {
    res.body.destroy();
  }
}
