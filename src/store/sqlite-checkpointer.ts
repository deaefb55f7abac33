import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * WAL checkpoints off the event loop. SQLite normally checkpoints inside whichever commit crosses
 * the threshold, stalling that request (and every request queued behind it) for milliseconds.
 * With automatic checkpoints off on the serving connection, a worker thread with its own
 * connection runs a PASSIVE checkpoint every `everyMs`: it never blocks writers.
 *
 * A passive checkpoint alone does not keep the WAL small under steady writes: SQLite starts the WAL
 * over only when a write finds every frame already copied, and with a commit every few ms one
 * nearly always lands while a checkpoint runs, so the file grew by ~9 MB a second under the
 * embeddings benchmark, without end. Once the WAL holds `restartFrames` frames, the worker runs a
 * RESTART checkpoint instead: writers wait while it copies what the passive pass left (the frames
 * of the last few ms) and syncs, and the next write starts the WAL from its beginning
 * (`journal_size_limit` then trims the file). A stall of milliseconds every `restartFrames` frames
 * (~64 MB of WAL with 4 KB pages, several seconds at that write rate) bounds the file.
 *
 * The worker is a second V8 isolate (about 8 MB of resident memory), so it runs only while there
 * is something to checkpoint: the first write after a quiet spell starts it (`wrote()`), and it
 * leaves once the WAL has had no new frame for `idleMs`, everything in it checkpointed. A gateway
 * that only reads (polls answered from the store) or sits idle does not keep it. Starting one costs
 * some tens of ms of CPU off the event loop, at most once per `idleMs`.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 1000');
const timer = setInterval(() => {
  let r;
  try { [r] = db.pragma('wal_checkpoint(PASSIVE)'); } catch { /* busy: next time */ }
  if (r && r.log >= workerData.restartFrames) {
    try { [r] = db.pragma('wal_checkpoint(RESTART)'); } catch { /* busy: next time */ }
  }
  parentPort.postMessage(r ? { log: r.log, checkpointed: r.checkpointed } : { busy: true });
}, workerData.everyMs);
parentPort.on('message', (m) => {
  if (m === 'stop') { clearInterval(timer); try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {} db.close(); parentPort.close(); }
});
`;

/** What a worker reports after each checkpoint run: the WAL's frames, and how many are in the database. */
interface Run {
  log?: number;
  checkpointed?: number;
}

type State = 'idle' | 'running' | 'leaving' | 'stopped' | 'failed';

export class Checkpointer {
  private worker: Worker | undefined;
  private state: State = 'idle';
  /** A write arrived while the worker was leaving: start a new one once it is gone. */
  private again = false;
  /** How long the WAL has had no new frame, everything checkpointed, and its frame count then. */
  private quietMs = 0;
  private lastLog = -1;
  private readonly module = createRequire(import.meta.url).resolve('better-sqlite3');

  /** `onFailure` runs if a worker dies unasked, so the caller can turn automatic checkpoints back on. */
  constructor(
    private readonly path: string,
    private readonly onFailure: () => void,
    private readonly everyMs = 1_000,
    private readonly idleMs = 10_000,
    private readonly restartFrames = 16_384,
  ) {}

  /** Whether a worker thread is up (for tests and diagnostics). */
  get running(): boolean {
    return this.worker !== undefined;
  }

  /** Called after every statement that may write: starts the worker if none is up. */
  wrote(): void {
    if (this.state === 'idle') this.start();
    else if (this.state === 'leaving') this.again = true;
  }

  private start(): void {
    this.state = 'running';
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path: this.path, everyMs: this.everyMs, restartFrames: this.restartFrames, module: this.module } });
    this.worker = worker;
    // Unref'd: it never keeps a process alive on its own (stop() refs it while closing).
    worker.unref();
    worker.on('error', () => undefined);
    this.quietMs = 0;
    this.lastLog = -1;
    // Decided here, on the thread that writes: a write after the decision finds the state 'leaving'
    // and starts the next worker, and the leaving worker's last checkpoint covers any write before.
    worker.on('message', (m: Run) => {
      const quiet = m.log !== undefined && m.log === this.lastLog && m.checkpointed === m.log;
      this.quietMs = quiet ? this.quietMs + this.everyMs : 0;
      this.lastLog = m.log ?? -1;
      if (this.quietMs >= this.idleMs && this.state === 'running') {
        this.state = 'leaving';
        worker.postMessage('stop');
      }
    });
    worker.once('exit', () => {
      this.worker = undefined;
      if (this.state === 'leaving') {
        this.state = 'idle';
        if (this.again) {
          this.again = false;
          this.start();
        }
      } else if (this.state === 'running') {
        this.state = 'failed';
        this.onFailure();
      }
    });
  }

  /**
   * Asks the worker, if one is up, for a last checkpoint and waits (at most 2 s) for it to exit.
   * While stopping it is ref'd, else a caller awaiting this with nothing else pending would see
   * Node end the process mid-close (exit code 13).
   */
  async stop(): Promise<void> {
    this.state = 'stopped';
    const worker = this.worker;
    if (!worker) return;
    worker.ref();
    let timer: NodeJS.Timeout | undefined;
    const exited = new Promise<boolean>((resolve) => worker.once('exit', () => resolve(true)));
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), 2_000)));
    worker.postMessage('stop');
    const stopped = await Promise.race([exited, late]);
    clearTimeout(timer);
    if (!stopped) await worker.terminate();
  }
}
