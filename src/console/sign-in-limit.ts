/** One attempt counted by SignInLimiter.begin(). */
export interface SignInAttempt {
  /** 0 when the attempt may go ahead (it is counted); else the whole seconds until the address may try again (not counted). */
  retryAfter: number;
  /** Gives the attempt's place back: call it once the attempt succeeded. */
  succeeded(): void;
}

/**
 * Failed sign-ins per client address in a fixed window: enough for a person who mistypes, far too
 * few to guess a token. Once an address reaches the limit it may not try at all (not even the right
 * token) until the window ends: otherwise the answer to the right token would tell a guesser it was
 * right. Successful sign-ins do not count: an operator who signs in often is no attacker, and live
 * sessions are bounded separately. Bounded memory: past `maxAddresses` the oldest windows are forgotten.
 */
export class SignInLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly now: () => number,
    private readonly maxFailures = 10,
    private readonly windowMs = 60_000,
    private readonly maxAddresses = 50_000,
  ) {}

  /**
   * Counts an attempt before it is judged, to be given back if it succeeds. Checking first and counting
   * a failure only after an awaited key lookup let every guess sent at once through (300 concurrent
   * wrong keys were all looked up): counted up front, the attempts in flight take the places themselves.
   */
  begin(address: string): SignInAttempt {
    const wait = this.retryAfter(address);
    if (wait > 0) return { retryAfter: wait, succeeded: () => undefined };
    const w = this.count(address);
    let given = false;
    return {
      retryAfter: 0,
      succeeded: () => {
        // Only into the window it was taken from, once: a window that ended meanwhile has nothing of it.
        if (given || this.windows.get(address) !== w || w.count === 0) return;
        given = true;
        w.count -= 1;
      },
    };
  }

  /** 0 when the address may try; else the whole seconds until it may. */
  retryAfter(address: string): number {
    const w = this.windows.get(address);
    const at = this.now();
    if (!w || at - w.start >= this.windowMs || w.count < this.maxFailures) return 0;
    return Math.max(1, Math.ceil((w.start + this.windowMs - at) / 1000));
  }

  /** Counts one failed attempt (for checks that complete without awaiting anything). */
  fail(address: string): void {
    this.count(address);
  }

  private count(address: string): { start: number; count: number } {
    const at = this.now();
    let w = this.windows.get(address);
    if (!w || at - w.start >= this.windowMs) {
      this.windows.delete(address);
      if (this.windows.size >= this.maxAddresses) {
        const oldest = this.windows.keys().next().value;
        if (oldest !== undefined) this.windows.delete(oldest);
      }
      w = { start: at, count: 0 };
      this.windows.set(address, w);
    }
    w.count += 1;
    return w;
  }
}
