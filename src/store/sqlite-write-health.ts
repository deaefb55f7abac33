import { isSqliteWriteFailure } from '../core/errors.js';

/**
 * How long after a write failed for want of room or a working file (SQLITE_FULL, SQLITE_IOERR ...)
 * the store counts as failing when no write has succeeded since. Bounded: a gateway taken out of
 * the load balancer gets few writes to prove itself with, so after this long it takes traffic again
 * (and the next failed write takes it out again).
 */
export const WRITE_FAILURE_WINDOW_MS = 30_000;

/**
 * Whether SQLite's writes have been failing lately. The write lock can still be taken on a full
 * disk (taking it writes nothing), so `/ready` cannot see that by probing: it is told by the writes.
 * Another process's lock (SQLITE_BUSY) is not counted here: the lock probe sees it come and go.
 */
export class WriteHealth {
  private failedAt: number | undefined;

  constructor(private readonly now: () => number = Date.now) {}

  /** `fn` (a statement or script), its failure noted. */
  watch<T>(fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      this.failed(e);
      throw e;
    }
  }

  /** A statement, COMMIT or BEGIN failed with `e`. */
  failed(e: unknown): void {
    if (isSqliteWriteFailure(e)) this.failedAt = this.now();
  }

  /** A write reached the database (a statement outside a transaction, or a COMMIT). */
  succeeded(): void {
    this.failedAt = undefined;
  }

  failing(): boolean {
    return this.failedAt !== undefined && this.now() - this.failedAt < WRITE_FAILURE_WINDOW_MS;
  }
}
