import { channel } from 'node:diagnostics_channel';
import { fdatasyncSync } from 'node:fs';
import { PassHandles, SyncFiles, type PassResult } from './sqlite-checkpoint-handles.js';
import { abortOnSyncFailure, syncFile, type CheckpointOptions, type CheckpointPassEvent, type HoldStatements } from './sqlite-checkpoint-options.js';

/**
 * WAL checkpoints without stalling the event loop and without a second V8 isolate.
 *
 * SQLite normally checkpoints inside whichever commit crosses the threshold. With
 * `synchronous = NORMAL` a checkpoint syncs the WAL, copies its newest page versions into the
 * database file, then syncs the database file; the copying takes about a millisecond a second under
 * the embeddings benchmark, the two syncs 15-20 ms each on this kind of disk, and sometimes far
 * more. So the serving connection has automatic checkpoints off, and every `everyMs` a pass does
 * the same three steps with the syncs on libuv's threadpool:
 *
 *   1. A read transaction on a second connection (the "pin") takes a read mark at the WAL's last
 *      frame. Checkpoints copy no frame past the oldest reader's mark, and no writer starts the
 *      WAL over while a reader holds one.
 *   2. `fdatasync` of the WAL (off the thread): every frame up to the pin is durable.
 *   3. A PASSIVE checkpoint on a third connection with `synchronous = OFF`: it copies the frames up
 *      to the pin (page writes into the OS cache, no sync), never waiting for or blocking a writer.
 *   4. `fdatasync` of the database file (off the thread), and only then the pin is released.
 *
 * That is SQLite's own order (the WAL durable before the database changes, the database durable
 * before the WAL can be reused) with the waits moved off the event loop. A failed sync of the WAL
 * is tried again by the next pass under the same pin; a failed sync of the database file after a
 * copy stops everything (`syncFailed`). One sync stays on the event loop, as SQLite requires: the
 * first write after a complete copy starts the WAL over and syncs its header.
 *
 * A pass alone does not keep the WAL small under steady writes: SQLite starts the WAL over only when
 * a write finds every frame already copied and no reader, and with a commit every few ms there is
 * nearly always a new frame by the time a pass ends. Once the WAL holds `restartFrames` frames, a
 * pass runs while the store's own statement lock is held (`hold`, asynchronous: requests go on,
 * statements queue), so it copies everything and the next write starts the WAL from its beginning
 * (`journal_size_limit` then trims the file). The lock is let go after `holdLimitMs` whatever a
 * sync is doing; the pin still protects the frames.
 *
 * The timer and the two connections are there only while there is something to checkpoint: the
 * first write after a quiet spell opens them (`wrote()`), and once the WAL has had no new frame for
 * `idleMs`, all of it copied, they are closed. The two files the passes sync stay open from the first
 * pass until the store closes (SyncFiles: closing one would drop the serving connection's locks).
 */

const passChannel = channel('gateway:sqlite-checkpoint-pass');

export class Checkpointer {
  private timer: NodeJS.Timeout | undefined;
  private state: 'idle' | 'running' | 'stopped' | 'failed' = 'idle';
  private handles: PassHandles | undefined;
  /** Open from the first pass until `closeFiles`, after the serving connection closed (see SyncFiles). */
  private files: SyncFiles | undefined;
  private pass: Promise<void> | undefined;
  /** How long the WAL has had no new frame, everything checkpointed, and its frame count then. */
  private quietMs = 0;
  private last: PassResult | undefined;
  private failuresInARow = 0;
  /** The WAL's size when a held pass last copied all of it: it starts over at the next write. */
  private restartedAt = -1;
  /**
   * A reader outside this process (a backup, `sqlite3` at a prompt) keeps every frame after its
   * snapshot from being copied, however long the statements are held: a held pass cannot finish
   * then, and holding them again every pass would stall requests for nothing. So after a held pass
   * that left frames behind, the next one waits, twice as long each time up to `heldBackoffCapMs`
   * (plain passes go on meanwhile); a held pass that copies everything ends the back-off.
   */
  private heldBackoffMs = 0;
  private nextHeldAt = 0;

  private readonly everyMs: number;
  private readonly idleMs: number;
  private readonly restartFrames: number;
  private readonly hold: HoldStatements;
  private readonly holdLimitMs: number;
  private readonly heldBackoffCapMs: number;
  private readonly sync: (fd: number) => Promise<void>;
  private readonly onSyncFailure: (e: Error) => void;

  constructor(
    private readonly path: string,
    opts: CheckpointOptions = {},
  ) {
    this.everyMs = opts.everyMs ?? 1_000;
    this.idleMs = opts.idleMs ?? 10_000;
    this.restartFrames = opts.restartFrames ?? 16_384;
    this.hold = opts.hold ?? (() => Promise.resolve(() => undefined));
    this.holdLimitMs = opts.holdLimitMs ?? 5_000;
    this.heldBackoffCapMs = Math.min(60_000, this.everyMs * 64);
    this.sync = opts.sync ?? syncFile;
    this.onSyncFailure = opts.onSyncFailure ?? abortOnSyncFailure;
  }

  /** Whether passes are scheduled (for tests and diagnostics). */
  get running(): boolean {
    return this.timer !== undefined;
  }

  /** Whether the pin holds the WAL (a pass is between its steps, or waits for a sync to succeed). */
  get pinned(): boolean {
    return this.handles?.pinned ?? false;
  }

  /** Called after every statement that may write: schedules passes if none are. */
  wrote(): void {
    if (this.state !== 'idle') return;
    this.state = 'running';
    this.quietMs = 0;
    // Opened now rather than at the first pass, so the descriptors a write brings come with the
    // write; should it fail (the WAL file not made yet), the first pass tries again.
    try {
      this.handles ??= this.openHandles();
    } catch {
      // Left to the pass.
    }
    this.timer = setInterval(() => this.tick(), this.everyMs);
    // Never keeps a process alive on its own.
    this.timer.unref();
  }

  private tick(): void {
    if (this.pass) return;
    this.pass = this.runPass().finally(() => (this.pass = undefined));
  }

  private async runPass(): Promise<void> {
    let result: PassResult | undefined;
    try {
      this.handles ??= this.openHandles();
      result = await this.passOver(this.handles, this.needsRestart());
    } catch (e) {
      // The WAL file not made yet, a lock another process holds, a failed sync of the WAL (nothing
      // was copied: the next pass syncs again before it copies): the next pass tries again, and the
      // pin (if taken) still guards the frames. A failed sync after a copy is another matter.
      if (this.handles?.unsynced && this.state !== 'stopped') this.syncFailed(e as Error);
      else if (this.state === 'running') this.noteFailure(e as Error);
    }
    if (result) this.failuresInARow = 0;
    this.afterPass(result);
  }

  /**
   * A pass that keeps failing keeps the WAL growing (and, after a failed WAL sync, the pin held), so
   * it is reported: on the first failure and every 60th in a row after it, as a process warning (the
   * store has no logger; Node prints warnings on stderr).
   */
  private noteFailure(e: Error): void {
    this.failuresInARow++;
    if (this.failuresInARow === 1 || this.failuresInARow % 60 === 0) {
      process.emitWarning(`SQLite checkpoint pass failed (${this.failuresInARow} in a row; the WAL keeps growing until one succeeds): ${e.message}`, 'CheckpointWarning');
    }
  }

  private needsRestart(): boolean {
    const last = this.last;
    return last !== undefined && last.log >= this.restartFrames && last.log !== this.restartedAt && performance.now() >= this.nextHeldAt;
  }

  /** After a held pass: back off while something outside kept frames from being copied (see `heldBackoffMs`). */
  private afterHeldPass(result: PassResult): void {
    if (result.checkpointed === result.log) {
      this.restartedAt = result.log;
      this.heldBackoffMs = 0;
      this.nextHeldAt = 0;
      return;
    }
    this.heldBackoffMs = Math.min(this.heldBackoffCapMs, Math.max(2 * this.everyMs, 2 * this.heldBackoffMs));
    this.nextHeldAt = performance.now() + this.heldBackoffMs;
  }

  /** One pass: pin, sync the WAL, copy, sync the database file, unpin; under the lock if `held`. */
  private async passOver(h: PassHandles, held: boolean): Promise<PassResult> {
    let release: (() => void) | undefined;
    let limit: NodeJS.Timeout | undefined;
    if (held) {
      const letGo = await this.hold();
      if (this.state === 'stopped') {
        letGo();
        throw new Error('stopped');
      }
      release = letGo;
      // A sync stuck in the kernel must not keep the store's statements waiting for good.
      limit = setTimeout(() => release?.(), this.holdLimitMs);
      limit.unref();
    }
    const startedAt = performance.now();
    try {
      h.takePin();
      await this.sync(h.walFd);
      const copyStart = performance.now();
      const [copied] = h.copier.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number; log: number; checkpointed: number }>;
      const copyMs = performance.now() - copyStart;
      h.unsynced = true;
      await this.sync(h.dbFd);
      h.unsynced = false;
      h.unpin();
      // Another process's checkpoint had the lock: SQLite reports -1s then, which say nothing.
      if (copied.busy !== 0 || copied.log < 0) throw new Error('checkpoint busy');
      const result = { log: copied.log, checkpointed: copied.checkpointed };
      if (held) this.afterHeldPass(result);
      if (passChannel.hasSubscribers) {
        const event: CheckpointPassEvent = { held, startedAt, ms: performance.now() - startedAt, copyStartedAt: copyStart, copyMs };
        passChannel.publish(event);
      }
      return result;
    } finally {
      clearTimeout(limit);
      release?.();
    }
  }

  private afterPass(result: PassResult | undefined): void {
    const last = this.last;
    const quiet = result !== undefined && result.checkpointed === result.log && last !== undefined && last.log === result.log;
    this.quietMs = quiet ? this.quietMs + this.everyMs : 0;
    if (result) this.last = result;
    if (this.quietMs >= this.idleMs && this.state === 'running') {
      clearInterval(this.timer);
      this.timer = undefined;
      this.state = 'idle';
      // Quiet and all copied: the connections are given back until the next write (the synced files stay open).
      // The pin is not held here (the pass that saw everything copied released it).
      this.closeHandles();
    }
  }

  /**
   * The database file's sync failed after pages were copied into it. Retrying proves nothing: Linux
   * marks pages whose write-back failed as clean and reports the error once, so a later sync can
   * succeed without writing them, and SQLite, which counts them as copied, would never copy them
   * again. So the passes stop for good and the pin stays, which keeps the WAL (synced before the
   * copy) from starting over: every copied page stays durable there, and the next start replays it.
   */
  private syncFailed(e: Error): void {
    this.state = 'failed';
    clearInterval(this.timer);
    this.timer = undefined;
    this.onSyncFailure(e);
  }

  /**
   * Stops the passes, waits (at most 2 s) for one in progress, makes sure what it copied is synced,
   * and closes the pass's connections, so that the serving connection, closing last, runs SQLite's
   * own final checkpoint with its syncs (which syncs the database file only if it copies something).
   * After a failed sync nothing is closed: the open pin keeps the WAL file in place for the next start.
   */
  async stop(): Promise<void> {
    if (this.state === 'failed') return;
    this.state = 'stopped';
    clearInterval(this.timer);
    this.timer = undefined;
    const pass = this.pass;
    if (pass) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([pass, new Promise((resolve) => (timer = setTimeout(resolve, 2_000)))]);
      clearTimeout(timer);
    }
    const h = this.handles;
    if (h?.unsynced) {
      // A pass still waiting on its sync, or one that failed while stopping: sync here, waiting.
      try {
        fdatasyncSync(h.dbFd);
        h.unsynced = false;
      } catch (e) {
        this.syncFailed(e as Error);
        return;
      }
    }
    this.closeHandles();
  }

  private openHandles(): PassHandles {
    this.files ??= new SyncFiles(this.path);
    return new PassHandles(this.path, this.files);
  }

  /**
   * Closes the files the passes sync. Only once the serving connection has closed (the store's
   * close): closing them earlier would drop its locks on the database (see SyncFiles). After a failed
   * sync they stay open too, as the pin does.
   */
  closeFiles(): void {
    if (this.state === 'failed') return;
    const files = this.files;
    this.files = undefined;
    try {
      files?.close();
    } catch {
      // Already gone: nothing is left to release.
    }
  }

  private closeHandles(): void {
    const h = this.handles;
    this.handles = undefined;
    try {
      h?.close();
    } catch {
      // A handle already gone: nothing is left to release.
    }
  }
}
