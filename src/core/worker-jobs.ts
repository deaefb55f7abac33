import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { parentPort, Worker, type Transferable } from 'node:worker_threads';

/**
 * CPU-bound work moved off the main thread, so that one large piece of it (parsing tens of MB of
 * JSON) does not hold every other request: one worker thread, started on the first job, runs the
 * jobs one at a time in the order they came. The queue has no bound of its own: the callers bound
 * what they queue (a chat answer's bytes are held in the process's answer budget until its request
 * is over).
 *
 * - A job whose caller gives up (`signal`: the client left, its deadline passed) leaves the queue;
 *   when it is the one running, the worker is stopped rather than left to finish work nobody wants,
 *   and the next job starts a fresh one.
 * - A worker that dies (an uncaught error, an exit) fails the job it was running with WorkerFailed;
 *   the next job starts a fresh worker. Running out of memory is not among these: V8 ends the whole
 *   process for an allocation that does not fit even in a worker with its own heap limits (measured:
 *   JSON.parse of 60 MB in a worker limited to 32 MB), so the work a worker is given must be bounded
 *   in size by its caller, as the main thread's would be.
 * - The worker never keeps the process alive on its own (it is unref'd): a job waits for it only as
 *   long as something else (a request) keeps the process running.
 */

/** The job's worker died or reported an error; the job produced nothing. */
export class WorkerFailed extends Error {}

/** The caller gave the job up before it was done. */
export class JobAbandoned extends Error {}

/** What `run` needs of a caller's cancellation (an AbortSignal, or the request's own CallSignal). */
export interface JobSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** What a worker posts back for one job. */
type Reply<Out> = { ok: true; value: Out } | { ok: false; message: string };

interface Job<In, Out> {
  input: In;
  transfer: Transferable[];
  resolve(out: Out): void;
  reject(e: Error): void;
  signal?: JobSignal;
  onAbort(): void;
}

export class WorkerJobs<In, Out> {
  private worker: Worker | undefined;
  private running: Job<In, Out> | undefined;
  private readonly queue: Job<In, Out>[] = [];
  private closed = false;
  private starts = 0;

  /** Workers started so far (a fresh one after each death or stop). */
  get started(): number {
    return this.starts;
  }

  /** Whether a job is on the worker now. */
  get busy(): boolean {
    return this.running !== undefined;
  }

  /** `start` makes a worker whose script answers jobs with `serveJobs`. */
  constructor(private readonly start: () => Worker) {}

  /** Runs `input` (its `transfer` list moves to the worker rather than being copied) on the worker. */
  run(input: In, transfer: Transferable[], signal?: JobSignal): Promise<Out> {
    if (this.closed) return Promise.reject(new WorkerFailed('the worker is shut down'));
    if (signal?.aborted) return Promise.reject(new JobAbandoned('the job was given up before it started'));
    return new Promise<Out>((resolve, reject) => {
      const job: Job<In, Out> = { input, transfer, resolve, reject, signal, onAbort: () => this.abandon(job) };
      signal?.addEventListener('abort', job.onAbort, { once: true });
      this.queue.push(job);
      this.next();
    });
  }

  /** Stops the worker; jobs queued or running fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) this.settle(job, new WorkerFailed('the worker is shut down'));
    if (this.running) this.finish(this.running, new WorkerFailed('the worker is shut down'));
    await this.stop();
  }

  private next(): void {
    if (this.running || this.closed) return;
    const job = this.queue.shift();
    if (!job) return;
    this.running = job;
    try {
      const w = (this.worker ??= this.spawn());
      w.postMessage(job.input, job.transfer);
    } catch (e) {
      this.finish(job, new WorkerFailed(`the job could not be handed to the worker: ${(e as Error).message}`));
    }
  }

  private spawn(): Worker {
    const w = this.start();
    this.starts++;
    w.unref();
    w.on('message', (reply: Reply<Out>) => {
      const job = this.running;
      if (w !== this.worker || !job) return;
      if (reply.ok) this.finish(job, undefined, reply.value);
      else this.finish(job, new WorkerFailed(reply.message));
    });
    w.on('messageerror', (e) => this.lost(w, `its answer could not be read: ${e.message}`));
    w.on('error', (e) => this.lost(w, e.message));
    w.on('exit', (code) => this.lost(w, `it exited with code ${code}`));
    return w;
  }

  /** The worker `w` is dead or unusable: its job fails, and the next job gets a fresh worker. */
  private lost(w: Worker, why: string): void {
    if (w !== this.worker) return;
    this.worker = undefined;
    w.terminate().catch(() => undefined);
    if (this.running) this.finish(this.running, new WorkerFailed(`the worker failed: ${why}`));
  }

  private abandon(job: Job<In, Out>): void {
    const queued = this.queue.indexOf(job);
    if (queued >= 0) {
      this.queue.splice(queued, 1);
      this.settle(job, new JobAbandoned('the job was given up while it waited'));
    } else if (this.running === job) {
      // Its result would be thrown away: the worker's time goes to the next job instead.
      void this.stop();
      this.finish(job, new JobAbandoned('the job was given up while it ran'));
    }
  }

  private async stop(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    await w?.terminate().catch(() => undefined);
  }

  private finish(job: Job<In, Out>, error: Error | undefined, value?: Out): void {
    this.running = undefined;
    this.settle(job, error, value);
    this.next();
  }

  private settle(job: Job<In, Out>, error: Error | undefined, value?: Out): void {
    job.signal?.removeEventListener('abort', job.onAbort);
    if (error) job.reject(error);
    else job.resolve(value as Out);
  }
}

/**
 * In a worker's script: answers each job with `handle`'s value, moving its `transfer` list back; an
 * error thrown by `handle` is the job's WorkerFailed, and the worker goes on with the next job.
 */
export function serveJobs<In, Out>(handle: (input: In) => Promise<{ value: Out; transfer: Transferable[] }>): void {
  const port = parentPort;
  if (!port) throw new Error('serveJobs runs in a worker thread');
  port.on('message', (input: In) => {
    handle(input).then(
      ({ value, transfer }) => port.postMessage({ ok: true, value } satisfies Reply<Out>, transfer),
      (e: unknown) => port.postMessage({ ok: false, message: e instanceof Error ? e.message : String(e) } satisfies Reply<Out>),
    );
  });
}

/**
 * Bytes that can be moved to another thread: `buf` itself when it spans its whole memory, else a
 * copy (a view into a shared pool, or a part of a larger buffer, cannot be moved without the rest).
 */
export function movable(buf: Uint8Array): Uint8Array<ArrayBuffer> {
  const whole = buf.byteOffset === 0 && buf.byteLength === buf.buffer.byteLength && buf.buffer instanceof ArrayBuffer;
  return whole ? (buf as Uint8Array<ArrayBuffer>) : new Uint8Array(buf);
}

/** A Buffer over bytes received from another thread (they arrive as a plain Uint8Array), without a copy. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Starts the worker script `name` that sits beside the module at `moduleUrl`: the compiled `.js`
 * (dist/), or, when that module is itself TypeScript run through tsx or vitest (tests, benchmarks),
 * the `.ts` source with tsx's loader registered in the worker first (a worker does not inherit it).
 */
export function startWorkerBeside(moduleUrl: string, name: string): Worker {
  if (!moduleUrl.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, moduleUrl));
  const script = new URL(`./${name}.ts`, moduleUrl).href;
  const boot = `import(${JSON.stringify(tsxLoaderUrl(moduleUrl))}).then((m) => m.register()).then(() => import(${JSON.stringify(script)}));`;
  return new Worker(boot, { eval: true });
}

/** tsx's ESM registration module, resolved from `moduleUrl` (require resolution names its CommonJS twin). */
function tsxLoaderUrl(moduleUrl: string): string {
  const cjs = createRequire(moduleUrl).resolve('tsx/esm/api');
  return pathToFileURL(cjs.replace(/\.cjs$/, '.mjs')).href;
}
