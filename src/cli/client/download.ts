import { closeSync, existsSync, openSync, renameSync, statSync, truncateSync, writeSync } from 'node:fs';
import type { Dispatcher } from 'undici';
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

/** "bytes 100-999/1000" -> {start: 100, total: 1000}; "bytes *\/1000" -> {total: 1000}. */
function contentRange(h: string | string[] | undefined): { start?: number; total?: number } {
  const m = /^bytes (?:(\d+)-\d+|\*)\/(\d+|\*)$/.exec(String(h ?? '').trim());
  if (!m) return {};
  return { start: m[1] === undefined ? undefined : Number(m[1]), total: m[2] === '*' ? undefined : Number(m[2]) };
}

const sizeOf = (p: string) => (existsSync(p) ? statSync(p).size : 0);

/**
 * Downloads a video's content to `out`. Bytes go to `out.part` first and the file is renamed only
 * once complete; a cut connection (here or in an earlier run) continues with a Range request from
 * the bytes already on disk. A server that ignores Range (200) restarts the file from zero.
 */
export async function downloadVideo(api: ApiClient, id: string, out: string, opts: { index?: number; timing: ClientTiming; progress?: ByteProgress }): Promise<DownloadResult> {
  const part = `${out}.part`;
  const path = `/v1/videos/${encodeURIComponent(id)}/content${opts.index ? `?index=${opts.index}` : ''}`;
  const progress = opts.progress ?? byteProgress('download');
  let resumes = 0;
  for (let attempt = 0; ; attempt++) {
    const offset = sizeOf(part);
    const res = await api.open(path, offset > 0 ? { range: `bytes=${offset}-` } : {});
    const total = await expectedTotal(res, offset, part);
    if (total === 'complete') break;
    if (total === 'restart') continue;
    const from = res.statusCode === 206 ? offset : 0;
    if (from > 0) resumes++;
    progress.start(total, from);
    try {
      await appendBody(res, part, from > 0, progress);
      progress.stop();
      const have = sizeOf(part);
      if (total === undefined || have === total) break;
      throw new Error(`the body ended at ${have} of ${total} bytes`);
    } catch (e) {
      progress.stop();
      if (attempt >= opts.timing.downloadRetries) {
        throw new CliError(`download interrupted at ${sizeOf(part)} bytes (${(e as Error).message}); run the same command again to resume`, EXIT.failure);
      }
      await sleep(opts.timing.backoffMs * 2 ** Math.min(attempt, 3));
    }
  }
  renameSync(part, out);
  return { path: out, bytes: sizeOf(out), resumes };
}

/**
 * Writes each chunk to disk as it arrives (flowing mode, synchronous writes: nothing waits in a
 * buffer), so that when the connection is cut everything that arrived is on disk and the next
 * Range request starts exactly there. A destroyed stream drops what it buffered; this one buffers nothing.
 */
async function appendBody(res: Dispatcher.ResponseData, part: string, append: boolean, progress: ByteProgress): Promise<void> {
  let fd: number;
  try {
    fd = openSync(part, append ? 'a' : 'w');
  } catch (e) {
    res.body.destroy();
    throw new CliError(`cannot write ${part}: ${(e as Error).message}`, EXIT.failure);
  }
  try {
    await new Promise<void>((resolve, reject) => {
      res.body.on('data', (chunk: Buffer) => {
        try {
          writeSync(fd, chunk);
          progress.advance(chunk.length);
        } catch (e) {
          res.body.destroy(e as Error);
        }
      });
      res.body.once('end', resolve);
      res.body.once('error', reject);
      // Closed without 'end' (destroyed without an error): incomplete. After 'end' this is a no-op.
      res.body.once('close', () => reject(new Error('the connection closed before the end of the body')));
    });
  } finally {
    res.body.destroy();
    closeSync(fd);
  }
}

/**
 * Checks a content answer against what is on disk: the total size to expect, 'complete' when
 * the partial file already holds everything, 'restart' when the partial file must be dropped.
 */
async function expectedTotal(res: Dispatcher.ResponseData, offset: number, part: string): Promise<number | undefined | 'complete' | 'restart'> {
  if (res.statusCode === 416) {
    await res.body.dump();
    const { total } = contentRange(res.headers['content-range']);
    if (total !== undefined && total === offset) return 'complete';
    truncateSync(part, 0);
    return 'restart';
  }
  if (res.statusCode === 206) {
    const { start, total } = contentRange(res.headers['content-range']);
    if (start !== offset) {
      // Not the bytes we asked for: never splice them onto the file.
      await res.body.dump();
      truncateSync(part, 0);
      return 'restart';
    }
    return total;
  }
  const length = Number(res.headers['content-length']);
  return Number.isInteger(length) && length >= 0 ? length : undefined;
}
