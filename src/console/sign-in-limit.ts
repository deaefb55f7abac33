/**
 * Sign-in attempts per client address in a fixed window: enough for a person who mistypes, far too
 * few to guess a token. Bounded memory: past `maxAddresses` the oldest windows are forgotten.
 */
export class SignInLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly now: () => number,
    private readonly maxAttempts = 10,
    private readonly windowMs = 60_000,
    private readonly maxAddresses = 50_000,
  ) {}

  /** Counts one attempt; returns 0 when allowed, else the seconds until the address may try again. */
  attempt(address: string): number {
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
    if (w.count >= this.maxAttempts) return Math.max(1, Math.ceil((w.start + this.windowMs - at) / 1000));
    w.count += 1;
    return 0;
  }
}
