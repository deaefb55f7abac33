/**
 * A FIFO async mutex. better-sqlite3 runs each statement synchronously, but a transaction spans
 * several awaits; without this, a second caller could slip its statements into the open
 * transaction of the first one (same connection) between two of those awaits.
 */
export class Mutex {
  private held = false;
  private readonly waiters: Array<() => void> = [];

  get locked(): boolean {
    return this.held;
  }

  /** Resolves with a release function once the caller owns the lock. */
  acquire(): Promise<() => void> {
    if (!this.held) {
      this.held = true;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve) => {
      this.waiters.push(() => resolve(this.releaser()));
    });
  }

  /**
   * Runs a synchronous `fn` under the lock. When nobody holds it the call runs at once
   * (nothing can interleave with synchronous code), which keeps single statements cheap.
   */
  runSync<T>(fn: () => T): Promise<T> {
    if (!this.held) {
      try {
        return Promise.resolve(fn());
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return this.acquire().then((release) => {
      try {
        return fn();
      } finally {
        release();
      }
    });
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.waiters.shift();
      // Hand the lock straight to the next waiter so nobody can barge in between.
      if (next) next();
      else this.held = false;
    };
  }
}
