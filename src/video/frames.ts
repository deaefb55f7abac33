import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { errors } from '../core/errors.js';
import { guard } from '../http/streams.js';

export interface FrameSettings {
  /** The ffmpeg binary (a name looked up on PATH, or a path). */
  ffmpegPath: string;
  /** Extractions running at once; more wait in a queue of `queueLimit`, beyond which 503. */
  concurrency: number;
  queueLimit: number;
  /** One extraction (download of the video to a temporary file included) is killed after this. */
  timeoutMs: number;
  /** The largest video the gateway downloads to make a thumbnail from. */
  maxInputBytes: number;
  /** The largest image ffmpeg may write; it is killed beyond. */
  maxOutputBytes: number;
  /** Where the video is put while ffmpeg reads it (removed after each extraction). */
  tmpDir: string;
}

const PROBE_TIMEOUT_MS = 5_000;
/** A missing ffmpeg is looked for again after this long (it may be installed meanwhile). */
const NEGATIVE_PROBE_TTL_MS = 60_000;
const STDERR_KEEP = 2_048;
/** The longest side of a gateway thumbnail: a preview, not a still of the full video. */
const MAX_WIDTH = 640;

/**
 * Thumbnails for vendors that make none: one frame of the finished video, read by ffmpeg from a
 * temporary copy (an MP4 whose index sits at its end cannot be read from a pipe). Bounded on every
 * side: running and waiting extractions, time (the child is killed with SIGKILL), the size of the
 * video copied and of the image written; a client that leaves kills its extraction too.
 */
export class FrameExtractor {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private known?: { at: number; ok: boolean };
  private probing?: Promise<boolean>;

  constructor(
    private readonly settings: FrameSettings,
    private readonly log: { warn(obj: object, msg?: string): void },
  ) {}

  /** What the last probe found (false before any): for answers that cannot wait for one. */
  availableNow(): boolean {
    return this.known?.ok ?? false;
  }

  /** Whether the configured ffmpeg runs at all (`-version`), remembered (a miss only for a minute). */
  async available(): Promise<boolean> {
    const k = this.known;
    if (k && (k.ok || Date.now() - k.at < NEGATIVE_PROBE_TTL_MS)) return k.ok;
    this.probing ??= this.runProbe().then((ok) => {
      this.known = { at: Date.now(), ok };
      this.probing = undefined;
      return ok;
    });
    return this.probing;
  }

  private runProbe(): Promise<boolean> {
    return new Promise((resolve) => {
      let child;
      try {
        child = spawn(this.settings.ffmpegPath, ['-hide_banner', '-version'], { stdio: 'ignore' });
      } catch {
        resolve(false);
        return;
      }
      const timer = setTimeout(() => child.kill('SIGKILL'), PROBE_TIMEOUT_MS);
      timer.unref();
      child.once('error', () => {
        clearTimeout(timer);
        resolve(false);
      });
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve(code === 0);
      });
    });
  }

  /**
   * A JPEG of the frame at `atSeconds` of `video`. The video stream is consumed (or destroyed) in
   * every case. Throws thumbnail_failed / thumbnail_timeout / overloaded, or the abort reason.
   */
  async extract(video: Readable, atSeconds: number, signal: AbortSignal): Promise<Buffer> {
    guard(video);
    try {
      await this.acquire(signal);
    } catch (e) {
      video.destroy();
      throw e;
    }
    const timeout = AbortSignal.timeout(this.settings.timeoutMs);
    const both = AbortSignal.any([signal, timeout]);
    let dir: string | undefined;
    try {
      await mkdir(this.settings.tmpDir, { recursive: true });
      dir = await mkdtemp(join(this.settings.tmpDir, 'thumb-'));
      const input = join(dir, 'video');
      await this.copy(video, input, both);
      return await this.run(input, atSeconds, both);
    } catch (e) {
      if (timeout.aborted && !signal.aborted) throw errors.thumbnailTimeout();
      throw e;
    } finally {
      video.destroy();
      this.release();
      if (dir) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  private async copy(video: Readable, path: string, signal: AbortSignal): Promise<void> {
    let seen = 0;
    const max = this.settings.maxInputBytes;
    const limit = new Transform({
      transform(chunk: Buffer, _enc, done) {
        seen += chunk.length;
        if (seen > max) done(errors.thumbnailFailed(`The video is larger than ${max} bytes; no thumbnail is made for it.`));
        else done(null, chunk);
      },
    });
    await pipeline(video, limit, createWriteStream(path), { signal });
  }

  private run(input: string, atSeconds: number, signal: AbortSignal): Promise<Buffer> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const args = ['-nostdin', '-hide_banner', '-loglevel', 'error', '-ss', atSeconds.toFixed(3), '-i', input, '-frames:v', '1',
      '-vf', `scale='min(${MAX_WIDTH},iw)':-2`, '-f', 'image2pipe', '-c:v', 'mjpeg', '-q:v', '4', 'pipe:1'];
    return new Promise((resolve, reject) => {
      const child = spawn(this.settings.ffmpegPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      const chunks: Buffer[] = [];
      let size = 0;
      let stderr = '';
      let failure: unknown;
      let spawnFailed = false;
      const kill = (why: unknown) => {
        failure ??= why;
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      };
      const onAbort = () => kill(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      guard(child.stdout);
      guard(child.stderr);
      child.stdout.on('data', (c: Buffer) => {
        size += c.length;
        if (size > this.settings.maxOutputBytes) kill(errors.thumbnailFailed('The extracted frame is larger than the thumbnail limit.'));
        else chunks.push(c);
      });
      child.stderr.on('data', (c: Buffer) => {
        stderr = (stderr + c.toString('utf8')).slice(-STDERR_KEEP);
      });
      child.once('error', (e: NodeJS.ErrnoException) => {
        // ENOENT/EACCES: the binary went away after the probe. 'close' may not follow a spawn failure.
        signal.removeEventListener('abort', onAbort);
        spawnFailed = true;
        this.known = undefined;
        reject(errors.notFound(`No thumbnail can be made: ffmpeg is not available (${e.code ?? 'spawn error'}).`, 'variant_unavailable'));
      });
      child.once('close', (code, sig) => {
        signal.removeEventListener('abort', onAbort);
        if (spawnFailed) return;
        if (failure !== undefined) return reject(failure);
        const image = Buffer.concat(chunks);
        // A JPEG starts with FF D8: anything else is not the image asked for.
        if (code === 0 && image.length > 2 && image[0] === 0xff && image[1] === 0xd8) return resolve(image);
        // ffmpeg's words stay in the log: they name local paths.
        this.log.warn({ code, signal: sig, stderr: stderr.trim() }, 'ffmpeg made no thumbnail');
        reject(errors.thumbnailFailed('The gateway could not extract a frame from this video.'));
      });
    });
  }

  private async acquire(signal: AbortSignal): Promise<void> {
    if (this.running < this.settings.concurrency) {
      this.running++;
      return;
    }
    if (this.waiting.length >= this.settings.queueLimit) throw errors.thumbnailBusy();
    await new Promise<void>((resolve, reject) => {
      const turn = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(turn);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason);
      };
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(turn);
    });
    // The slot was handed over by release(): `running` already counts it.
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }

  /** Extractions running now (for tests and metrics). */
  get active(): number {
    return this.running;
  }
}
