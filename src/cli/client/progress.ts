import { Presets, SingleBar } from 'cli-progress';
import { printable } from '../text.js';

/**
 * Progress on stderr: a live bar when stderr is a terminal, otherwise plain lines (no carriage
 * returns or escape sequences) only when something changed, so logs and pipes stay readable.
 */
export interface JobProgress {
  update(status: string, progress: number | undefined): void;
  stop(): void;
}

export interface ByteProgress {
  start(total: number | undefined, done: number): void;
  advance(bytes: number): void;
  stop(): void;
}

type Out = NodeJS.WritableStream & { isTTY?: boolean };


const seconds = (since: number) => Math.round((Date.now() - since) / 1000);

export function jobProgress(stream: Out = process.stderr): JobProgress {
  const started = Date.now();
  if (stream.isTTY) {
    const bar = new SingleBar(
      { stream, format: '{status} |{bar}| {shown} | {duration_formatted}', hideCursor: true, clearOnComplete: false, fps: 5 },
      Presets.shades_classic,
    );
    bar.start(100, 0, { status: 'submitted', shown: 'progress unknown' });
    return {
      update(status, progress) {
        bar.update(progress ?? 0, { status: printable(status), shown: progress === undefined ? 'progress unknown' : `${progress}%` });
      },
      stop: () => bar.stop(),
    };
  }
  let last = '';
  return {
    update(status, progress) {
      const line = `status ${printable(status)}${progress === undefined ? '' : ` progress ${progress}%`}`;
      if (line === last) return;
      last = line;
      stream.write(`${line} elapsed ${seconds(started)}s\n`);
    },
    stop() {},
  };
}

export function byteProgress(label: string, stream: Out = process.stderr): ByteProgress {
  const started = Date.now();
  if (stream.isTTY) {
    const bar = new SingleBar(
      { stream, format: `${label} |{bar}| {value}/{total} bytes | {eta_formatted}`, hideCursor: true, clearOnComplete: false, fps: 5 },
      Presets.shades_classic,
    );
    let done = 0;
    return {
      start(total, already) {
        done = already;
        bar.start(total ?? 0, already);
      },
      advance(bytes) {
        done += bytes;
        bar.update(done);
      },
      stop: () => bar.stop(),
    };
  }
  let done = 0;
  let total: number | undefined;
  return {
    start(t, already) {
      total = t;
      done = already;
      stream.write(`${label}: ${already > 0 ? `resuming at ${already} of ` : ''}${t ?? 'unknown'} bytes\n`);
    },
    advance(bytes) {
      done += bytes;
    },
    stop() {
      stream.write(`${label}: ${done}${total === undefined ? '' : ` of ${total}`} bytes after ${seconds(started)}s\n`);
    },
  };
}
