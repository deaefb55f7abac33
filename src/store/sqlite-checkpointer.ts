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

  /** `onFailure` runs if the worker dies, so the caller can turn automatic checkpoints back on. */
  constructor(path: string, onFailure: () => void, everyMs = 1_000) {
    const module = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, everyMs, module } });
    this.worker.unref();
    this.worker.on('error', () => undefined);
    this.worker.once('exit', () => {
      if (!this.stopping) onFailure();
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.postMessage('stop');
    await Promise.race([exited, new Promise<void>((r) => setTimeout(r, 2_000).unref())]);
  }
}
