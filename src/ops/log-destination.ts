import { writeSync } from 'node:fs';
import pino from 'pino';
import { logLinesDropped } from './metrics.js';

/** The longest a log line waits in the destination's buffer before it is written (ms). */
export const LOG_FLUSH_MS = 250;
/** The most the destination holds while its reader does not take lines; lines beyond are dropped (counted). */
export const LOG_BUFFER_MAX_BYTES = 4 * 1024 * 1024;
/** How long the exit, or the end of a shutdown, waits for a reader that does not take the last lines (ms). */
export const LOG_EXIT_FLUSH_MS = 500;
/** The line on stderr about dropped log lines comes at most this often (ms). */
const NOTICE_EVERY_MS = 60_000;

/** Standard output as the logger writes to it: buffered, asynchronous, and never in the way of serving. */
export interface LogDestination {
  write(line: string): unknown;
  flush(cb?: (err?: Error) => void): unknown;
  /** The exit's flush: writes what is buffered, waiting at most LOG_EXIT_FLUSH_MS for a stalled reader. */
  flushSync(): void;
  /** The end of a shutdown: a reader that takes nothing for `ms` more loses the rest (counted). */
  settle(ms: number): void;
}

/**
 * The sonic-boom 4.x state that the handling below reads and clears: the chunk being written (or
 * that failed), the chunks behind it, and their length in bytes. No public API gives these; the
 * version is pinned by the lock file, and test/ops/log-destination.test.ts fails if they move.
 */
interface SonicBoomState {
  fd: number;
  destroyed: boolean;
  _writing: boolean;
  _writingBuf: string;
  _bufs: string[];
  _len: number;
}

/**
 * pino's destination on `fd` (standard output), made safe against a destination that fails:
 *
 * - A write error (ENOSPC on a full disk, EPIPE from a reader that went away, EIO) drops the chunk
 *   that could not be written, counts its lines (gateway_log_lines_dropped_total) and says so on
 *   stderr at most once a minute; later lines are tried again. pino re-raised such an error with
 *   nothing to catch it: the process died, or hung in the exit's flush.
 * - A reader that stops reading (a full pipe: EAGAIN) is waited for, lines buffering meanwhile up
 *   to LOG_BUFFER_MAX_BYTES; lines beyond are dropped and counted.
 * - The exit's synchronous flush (sonic-boom's tries a failed write again for ever, sleeping in
 *   between) is replaced by one bounded by LOG_EXIT_FLUSH_MS, after which what is left is dropped.
 */
export function logDestination(fd = 1): LogDestination {
  // A pipe or socket on stdout becomes non-blocking when process.stdout is first used: a write to a
  // reader that stopped then fails with EAGAIN (retried) instead of holding a thread-pool thread,
  // or at exit the main thread, for ever. The same for stderr, which the notices below write to.
  if (fd === 1) void [process.stdout, process.stderr];
  let giveUpAt: number | undefined;
  const sonic = pino.destination({
    dest: fd,
    sync: false,
    // Buffered, asynchronous writes: a log line must not cost a write(2) on the request path. Under
    // load a write goes out per 4 KB; on a quiet gateway the buffer would hold its last lines until
    // 4 KB more arrived (minutes, or never), so it is also written every LOG_FLUSH_MS.
    minLength: 4096,
    periodicFlush: LOG_FLUSH_MS,
    maxLength: LOG_BUFFER_MAX_BYTES,
    // A full pipe is waited for, but not past the end of a shutdown (`settle`) or the exit.
    retryEAGAIN: () => giveUpAt === undefined || Date.now() < giveUpAt,
  });
  const state = sonic as unknown as SonicBoomState;
  const counter = droppedLines();
  const where = fd === 1 ? 'standard output' : `file descriptor ${fd}`;

  // pino's own listener ends logging on EPIPE and re-raises every other error; this one replaces it.
  sonic.removeAllListeners('error');
  sonic.on('error', (err: NodeJS.ErrnoException) => {
    // sonic-boom keeps the failed chunk to write it again before anything else: a destination that
    // keeps failing would then never move on. It is dropped; what is behind it gets its own try.
    const failed = state._writingBuf;
    if (!state._writing && failed.length > 0) {
      state._writingBuf = '';
      state._len = Math.max(0, state._len - Buffer.byteLength(failed));
    }
    counter.drop(lineCount(failed), `writing to ${where} failed: ${err.code ?? err.message}`);
  });
  sonic.on('drop', (line: string) =>
    counter.drop(lineCount(line), `${where} is not taking lines and the ${LOG_BUFFER_MAX_BYTES / 1024 / 1024} MiB buffer is full`),
  );

  const flushSync = () => {
    giveUpAt ??= Date.now() + LOG_EXIT_FLUSH_MS;
    if (state.destroyed || state.fd < 0) return;
    // A chunk still being written asynchronously (or waiting to be tried again) is left to that write.
    const pending = (state._writing ? '' : state._writingBuf) + state._bufs.join('');
    if (!state._writing) state._writingBuf = '';
    state._bufs = [];
    state._len = Buffer.byteLength(state._writingBuf);
    let buf = Buffer.from(pending);
    while (buf.length > 0) {
      try {
        buf = buf.subarray(writeSync(state.fd, buf));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EAGAIN' && Date.now() < giveUpAt) {
          pause(5);
          continue;
        }
        counter.drop(lineCount(buf), `writing to ${where} at exit failed: ${(e as NodeJS.ErrnoException).code ?? String(e)}`, true);
        return;
      }
    }
  };
  // pino's exit hook calls the stream's own flushSync: it must be this one too.
  sonic.flushSync = flushSync;
  return {
    write: (line) => sonic.write(line),
    flush: (cb) => sonic.flush(cb),
    flushSync,
    settle: (ms) => {
      giveUpAt = Math.min(giveUpAt ?? Infinity, Date.now() + ms);
    },
  };
}

/** Counts dropped lines, and says so on stderr at most once a minute (and at exit). */
function droppedLines() {
  let total = 0;
  let noticedAt = -Infinity;
  return {
    drop(lines: number, why: string, atExit = false) {
      if (lines > 0) logLinesDropped.inc(lines);
      total += lines;
      const now = Date.now();
      if (!atExit && now - noticedAt < NOTICE_EVERY_MS) return;
      if (atExit && lines === 0) return;
      noticedAt = now;
      const line = `gateway: log lines dropped (${why}); ${total} so far, counted in gateway_log_lines_dropped_total\n`;
      try {
        // Straight to the descriptor: process.stderr raises an error it cannot write (a full disk
        // for both) as an exception.
        writeSync(2, line);
      } catch {
        // stderr fails too: the counter is all there is.
      }
    },
  };
}

/** The lines in a chunk: one per newline, and one for a last line without its newline. */
function lineCount(chunk: string | Buffer): number {
  let n = 0;
  for (let i = chunk.indexOf('\n'); i >= 0; i = chunk.indexOf('\n', i + 1)) n++;
  const last = typeof chunk === 'string' ? chunk.charCodeAt(chunk.length - 1) : chunk[chunk.length - 1];
  return chunk.length > 0 && last !== 10 ? n + 1 : n;
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** A synchronous pause: the exit's flush has no event loop left to wait on. */
function pause(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}
