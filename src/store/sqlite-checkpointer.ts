import { channel } from 'node:diagnostics_channel';
import { closeSync, fdatasync, openSync } from 'node:fs';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';

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
 * before the WAL can be reused) with the waits moved off the event loop. Should a sync fail, the
 * pin stays until a later pass completes, so the WAL cannot start over on top of frames whose
 * pages are not yet durable in the database file.
 *
 * A pass alone does not keep the WAL small under steady writes: SQLite starts the WAL over only when
 * a write finds every frame already copied and no reader, and with a commit every few ms there is
 * nearly always a new frame by the time a pass ends. Once the WAL holds `restartFrames` frames, a
 * pass runs while the store's own statement lock is held (`hold`, asynchronous: requests go on,
 * statements queue), so it copies everything and the next write starts the WAL from its beginning
 * (`journal_size_limit` then trims the file). The lock is let go after `holdLimitMs` whatever a
 * sync is doing; the pin still protects the frames.
 *
 * The timer, the two connections and the file handles are there only while there is something to
 * checkpoint: the first write after a quiet spell opens them (`wrote()`), and once the WAL has had no
 * new frame for `idleMs`, all of it copied, they are closed.
 */

/** Takes the store's statement lock; resolves with its release once no statement of this process runs. */
export type HoldStatements = () => Promise<() => void>;

export interface CheckpointOptions {
  /** How often a checkpoint pass runs while there are writes (ms). */
  everyMs?: number;
  /** How long the WAL must stay unchanged, all of it checkpointed, before the passes stop (ms). */
  idleMs?: number;
  /** The WAL size (frames) past which a pass holds the statements so the WAL can start over. */
  restartFrames?: number;
  /** Keeps this process's statements out while such a pass runs (none given: nothing is held). */
  hold?: HoldStatements;
  /** The longest the statements are held for one pass (ms). */
  holdLimitMs?: number;
  /** Makes a file's written data durable (tests inject faults and delays here). */
  sync?: (fd: number) => Promise<void>;
}

type Db = InstanceType<typeof Database>;

/** What the last pass saw: the WAL's frames, and how many of them are in the database file. */
interface PassResult {
  log: number;
  checkpointed: number;
}

/** The connections and file handles a pass uses, opened by the first pass. */
class PassHandles {
  readonly pin: Db;
  readonly copier: Db;
  readonly readMark: Database.Statement;
  readonly walFd: number;
  readonly dbFd: number;

  constructor(path: string) {
    const opened: Array<() => void> = [];
    try {
      this.pin = new Database(path, { fileMustExist: true });
      opened.push(() => this.pin.close());
      this.pin.pragma('cache_size = -64');
      this.readMark = this.pin.prepare('SELECT count(*) FROM sqlite_master');
      this.copier = new Database(path, { fileMustExist: true });
      opened.push(() => this.copier.close());
      // Only this connection's checkpoints skip SQLite's syncs; the pass makes them itself.
      this.copier.pragma('synchronous = OFF');
      this.copier.pragma('cache_size = -64');
      this.walFd = openSync(`${path}-wal`, 'r');
      opened.push(() => closeSync(this.walFd));
      this.dbFd = openSync(path, 'r');
    } catch (e) {
      for (const undo of opened.reverse()) undo();
      throw e;
    }
  }

  close(): void {
    if (this.pin.inTransaction) this.pin.exec('ROLLBACK');
    this.pin.close();
    this.copier.close();
    closeSync(this.walFd);
    closeSync(this.dbFd);
  }
}

const syncFile = promisify(fdatasync);

/**
 * Each completed pass, for diagnostics (the benchmark's stall probe): whether it held the store's
 * statements, when it and its copying started (ms since `performance.timeOrigin`), its whole length
 * and the part spent copying on the event loop.
 */
export interface CheckpointPassEvent {
  held: boolean;
  startedAt: number;
  ms: number;
  copyStartedAt: number;
  copyMs: number;
}
const passChannel = channel('gateway:sqlite-checkpoint-pass');

export class Checkpointer {
  private timer: NodeJS.Timeout | undefined;
  private state: 'idle' | 'running' | 'stopped' = 'idle';
  private handles: PassHandles | undefined;
  private pass: Promise<void> | undefined;
  /** How long the WAL has had no new frame, everything checkpointed, and its frame count then. */
  private quietMs = 0;
  private last: PassResult | undefined;
  /** The WAL's size when a held pass last copied all of it: it starts over at the next write. */
  private restartedAt = -1;

  private readonly everyMs: number;
  private readonly idleMs: number;
  private readonly restartFrames: number;
  private readonly hold: HoldStatements;
  private readonly holdLimitMs: number;
  private readonly sync: (fd: number) => Promise<void>;

  constructor(
    private readonly path: string,
    opts: CheckpointOptions = {},
  ) {
    this.everyMs = opts.everyMs ?? 1_000;
    this.idleMs = opts.idleMs ?? 10_000;
    this.restartFrames = opts.restartFrames ?? 16_384;
    this.hold = opts.hold ?? (() => Promise.resolve(() => undefined));
    this.holdLimitMs = opts.holdLimitMs ?? 5_000;
    this.sync = opts.sync ?? syncFile;
  }

  /** Whether passes are scheduled (for tests and diagnostics). */
  get running(): boolean {
    return this.timer !== undefined;
  }

  /** Whether the pin holds the WAL (a pass is between its steps, or waits for a sync to succeed). */
  get pinned(): boolean {
    return this.handles?.pin.inTransaction ?? false;
  }

  /** Called after every statement that may write: schedules passes if none are. */
  wrote(): void {
    if (this.state !== 'idle') return;
    this.state = 'running';
    this.quietMs = 0;
    // Opened now rather than at the first pass, so the descriptors a write brings come with the
    // write; should it fail (the WAL file not made yet), the first pass tries again.
    try {
      this.handles ??= new PassHandles(this.path);
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
      this.handles ??= new PassHandles(this.path);
      result = await this.passOver(this.handles, this.needsRestart());
    } catch {
      // The WAL file not made yet, a sync that failed, a checkpoint another process runs: the
      // next pass tries again, and the pin (if taken) still guards the frames.
    }
    this.afterPass(result);
  }

  private needsRestart(): boolean {
    const last = this.last;
    return last !== undefined && last.log >= this.restartFrames && last.log !== this.restartedAt;
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
      if (!h.pin.inTransaction) {
        h.pin.exec('BEGIN');
        h.readMark.get();
      }
      await this.sync(h.walFd);
      const copyStart = performance.now();
      const [copied] = h.copier.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number; log: number; checkpointed: number }>;
      const copyMs = performance.now() - copyStart;
      await this.sync(h.dbFd);
      h.pin.exec('COMMIT');
      const result = { log: copied.log, checkpointed: copied.checkpointed };
      if (held && result.checkpointed === result.log) this.restartedAt = result.log;
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
      // Quiet and all copied: the connections and descriptors are given back until the next write.
      // The pin is not held here (the pass that saw everything copied released it).
      this.closeHandles();
    }
  }

  /**
   * Stops the passes, waits (at most 2 s) for one in progress, and closes the pass's connections,
   * so that the serving connection, closing last, runs SQLite's own final checkpoint with its syncs.
   */
  async stop(): Promise<void> {
    this.state = 'stopped';
    clearInterval(this.timer);
    this.timer = undefined;
    const pass = this.pass;
    if (pass) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([pass, new Promise((resolve) => (timer = setTimeout(resolve, 2_000)))]);
      clearTimeout(timer);
    }
    this.closeHandles();
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
