import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * WAL checkpoints off the event loop. SQLite normally checkpoints inside whichever commit crosses
 * the threshold, stalling that request (and every request queued behind it) for milliseconds.
 * With automatic checkpoints off on the serving connection, a worker thread with its own
 * connection runs a PASSIVE checkpoint every `everyMs`: it never blocks writers, and the WAL stays
 * small.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 1000');
const timer = setInterval(() => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch { /* busy: next time */ }
}, workerData.everyMs);
parentPort.on('message', (m) => {
  if (m === 'stop') { clearInterval(timer); try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {} db.close(); parentPort.close(); }
});
`;

export class Checkpointer {
  private readonly worker: Worker;
  private stopping = false;
  private exited = false;

  /** `onFailure` runs if the worker dies, so the caller can turn automatic checkpoints back on. */
  constructor(path: string, onFailure: () => void, everyMs = 1_000) {
    const module = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, everyMs, module } });
    this.worker.unref();
    this.worker.on('error', () => undefined);
    this.worker.once('exit', () => {
      this.exited = true;
      if (!this.stopping) onFailure();
    });
  }

  /**
   * Asks the worker for a last checkpoint and waits (at most 2 s) for it to exit. The worker is
   * unref'd so it never keeps a process alive on its own; while stopping it is ref'd, else a caller
   * awaiting this with nothing else pending would see Node end the process mid-close (exit code 13).
   */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.exited) return;
    this.worker.ref();
    let timer: NodeJS.Timeout | undefined;
    const exited = new Promise<boolean>((resolve) => this.worker.once('exit', () => resolve(true)));
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), 2_000)));
    this.worker.postMessage('stop');
    const stopped = await Promise.race([exited, late]);
    clearTimeout(timer);
    if (!stopped) await this.worker.terminate();
  }
}
