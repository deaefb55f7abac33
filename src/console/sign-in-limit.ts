/**
 * Failed sign-ins per client address in a fixed window: enough for a person who mistypes, far too
 * few to guess a token. Once an address reaches the limit it may not try at all (not even the right
 * token) until the window ends. Successful sign-ins are not counted: an operator who signs in often
 * is no attacker, and live sessions are bounded separately. Bounded memory: past `maxAddresses` the
 * oldest windows are forgotten.
 */
export class SignInLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly now: () => number,
    private readonly maxFailures = 10,
    private readonly windowMs = 60_000,
    private readonly maxAddresses = 50_000,
  ) {}

  /** 0 when the address may try; else the whole seconds until it may. */
  retryAfter(address: string): number {
    const w = this.windows.get(address);
    const at = this.now();
    if (!w || at - w.start >= this.windowMs || w.count < this.maxFailures) return 0;
    return Math.max(1, Math.ceil((w.start + this.windowMs - at) / 1000));
  }

  /** Counts one failed attempt. */
  fail(address: string): void {
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
  }
}
