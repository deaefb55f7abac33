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
 * embeddings benchmark, without end. Once the WAL holds `restartFrames` frames, a RESTART
 * checkpoint copies what the passive pass left and lets the next write start the WAL from its
 * beginning (`journal_size_limit` then trims the file). A RESTART keeps writers out while it
 * copies and syncs, and this process's writers are synchronous: one that met it would sit in
 * SQLite's busy handler with the event loop frozen (the benchmark saw stalls of 100-800 ms). So the
 * serving thread first takes the store's own statement lock (`hold`, asynchronous: requests go on,
 * statements queue) and only then asks the worker for the RESTART; no statement of this process
 * runs meanwhile, and the lock is released when the worker answers (or after `holdLimitMs`).
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
const checkpoint = (mode) => {
  let r;
  try { [r] = db.pragma('wal_checkpoint(' + mode + ')'); } catch { /* busy: next time */ }
  return r ? { log: r.log, checkpointed: r.checkpointed, mode } : { busy: true, mode };
};
const timer = setInterval(() => parentPort.postMessage(checkpoint('PASSIVE')), workerData.everyMs);
parentPort.on('message', (m) => {
  if (m === 'restart') parentPort.postMessage(checkpoint('RESTART'));
  if (m === 'stop') { clearInterval(timer); try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {} db.close(); parentPort.close(); }
});
`;

/** What a worker reports after each checkpoint run: the WAL's frames, and how many are in the database. */
interface Run {
  log?: number;
  checkpointed?: number;
  mode: 'PASSIVE' | 'RESTART';
}

/** Takes the store's statement lock; resolves with its release once no statement of this process runs. */
export type HoldStatements = () => Promise<() => void>;

export interface CheckpointOptions {
  /** How often the worker runs a passive checkpoint (ms). */
  everyMs?: number;
  /** How long the WAL must stay unchanged, all of it checkpointed, before the worker leaves (ms). */
  idleMs?: number;
  /** The WAL size (frames) past which a RESTART lets it start over. */
  restartFrames?: number;
  /** Keeps this process's statements out while the RESTART runs (none given: nothing is held). */
  hold?: HoldStatements;
  /** The longest the statements are held for one RESTART (ms). */
  holdLimitMs?: number;
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
  /** Releases the statement lock while a RESTART is asked for; undefined otherwise. */
  private held: (() => void) | undefined;
  private restarting = false;
  /** The WAL's size when a RESTART last completed: it starts over at the next write, not before. */
  private restartedAt = -1;
  private readonly module = createRequire(import.meta.url).resolve('better-sqlite3');

  private readonly everyMs: number;
  private readonly idleMs: number;
  private readonly restartFrames: number;
  private readonly hold: HoldStatements;
  private readonly holdLimitMs: number;

  /** `onFailure` runs if a worker dies unasked, so the caller can turn automatic checkpoints back on. */
  constructor(
    private readonly path: string,
    private readonly onFailure: () => void,
    opts: CheckpointOptions = {},
  ) {
    this.everyMs = opts.everyMs ?? 1_000;
    this.idleMs = opts.idleMs ?? 10_000;
    this.restartFrames = opts.restartFrames ?? 16_384;
    this.hold = opts.hold ?? (() => Promise.resolve(() => undefined));
    this.holdLimitMs = opts.holdLimitMs ?? 5_000;
  }

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
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path: this.path, everyMs: this.everyMs, module: this.module } });
    this.worker = worker;
    // Unref'd: it never keeps a process alive on its own (stop() refs it while closing).
    worker.unref();
    worker.on('error', () => undefined);
    this.quietMs = 0;
    this.lastLog = -1;
    // Decided here, on the thread that writes: a write after the decision finds the state 'leaving'
    // and starts the next worker, and the leaving worker's last checkpoint covers any write before.
    worker.on('message', (m: Run) => {
      if (m.mode === 'RESTART') {
        this.unhold();
        if (m.log !== undefined && m.checkpointed === m.log) this.restartedAt = m.log;
      } else if (m.log !== undefined && m.log >= this.restartFrames && m.log !== this.restartedAt) this.restart(worker);
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
      this.unhold();
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

  /** Takes the statement lock, then asks for the RESTART; the worker's answer releases the lock. */
  private restart(worker: Worker): void {
    if (this.restarting) return;
    this.restarting = true;
    this.hold().then(
      (release) => {
        if (this.worker !== worker || this.state !== 'running') {
          release();
          this.restarting = false;
          return;
        }
        // A worker stuck in the checkpoint must not keep the store's statements waiting for good.
        const limit = setTimeout(() => this.unhold(), this.holdLimitMs);
        limit.unref();
        this.held = () => {
          clearTimeout(limit);
          release();
        };
        worker.postMessage('restart');
      },
      () => {
        this.restarting = false;
      },
    );
  }

  private unhold(): void {
    const release = this.held;
    this.held = undefined;
    this.restarting = false;
    release?.();
  }

  /**
   * Asks the worker, if one is up, for a last checkpoint and waits (at most 2 s) for it to exit.
   * While stopping it is ref'd, else a caller awaiting this with nothing else pending would see
   * Node end the process mid-close (exit code 13).
   */
  async stop(): Promise<void> {
    this.state = 'stopped';
    this.unhold();
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
