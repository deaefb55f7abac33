// The connections and file descriptors of the SQLite checkpoint passes (sqlite-checkpointer.ts).
import { closeSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';

type Db = InstanceType<typeof Database>;

/** What the last pass saw: the WAL's frames, and how many of them are in the database file. */
export interface PassResult {
  log: number;
  checkpointed: number;
}

/**
 * The WAL and database files, opened for the passes' own syncs (`fdatasync`). Opened once and closed
 * only after the serving connection has closed (`Checkpointer.closeFiles`), never while it is open:
 * closing any descriptor of a file drops every POSIX lock this process holds on that file, SQLite's
 * shared lock on the database among them. Another process (a backup, the CLI) then takes the database
 * for unused when it closes, checkpoints it and deletes its WAL, which the server goes on writing.
 */
export class SyncFiles {
  readonly walFd: number;
  readonly dbFd: number;

  constructor(path: string) {
    // The database file last: a failure after it would mean closing it.
    this.walFd = openSync(`${path}-wal`, 'r');
    try {
      this.dbFd = openSync(path, 'r');
    } catch (e) {
      closeSync(this.walFd);
      throw e;
    }
  }

  close(): void {
    closeSync(this.walFd);
    closeSync(this.dbFd);
  }
}

/** The connections a pass uses (opened by the first pass, closed when the passes go idle) and the files it syncs. */
export class PassHandles {
  /** Whether the pin holds a read mark: set only once its first read succeeded. */
  pinned = false;
  /** Frames copied into the database file whose sync has not yet succeeded. */
  unsynced = false;
  readonly pin: Db;
  readonly copier: Db;
  readonly readMark: Database.Statement;
  readonly walFd: number;
  readonly dbFd: number;

  constructor(path: string, files: SyncFiles) {
    this.walFd = files.walFd;
    this.dbFd = files.dbFd;
    const opened: Array<() => void> = [];
    try {
      // No busy waiting: it would hold the event loop. A pass that meets a lock gives up and the
      // next one tries again.
      this.pin = new Database(path, { fileMustExist: true, timeout: 0 });
      opened.push(() => this.pin.close());
      this.pin.pragma('cache_size = -64');
      this.readMark = this.pin.prepare('SELECT count(*) FROM sqlite_master');
      this.copier = new Database(path, { fileMustExist: true, timeout: 0 });
      opened.push(() => this.copier.close());
      // Only this connection's checkpoints skip SQLite's syncs; the pass makes them itself.
      this.copier.pragma('synchronous = OFF');
      this.copier.pragma('cache_size = -64');
    } catch (e) {
      for (const undo of opened.reverse()) undo();
      throw e;
    }
  }

  /** Takes the pin's read mark, unless it holds one already. A failed first read leaves no transaction open. */
  takePin(): void {
    if (this.pinned) return;
    this.pin.exec('BEGIN');
    try {
      this.readMark.get();
    } catch (e) {
      this.pin.exec('ROLLBACK');
      throw e;
    }
    this.pinned = true;
  }

  unpin(): void {
    if (this.pin.inTransaction) this.pin.exec('COMMIT');
    this.pinned = false;
  }

  /** Closes the two connections; the files stay open (SyncFiles). SQLite itself defers closing a file another connection holds a lock on. */
  close(): void {
    if (this.pin.inTransaction) this.pin.exec('ROLLBACK');
    this.pin.close();
    this.copier.close();
  }
}
