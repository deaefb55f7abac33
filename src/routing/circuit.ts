/**
 * Per-upstream circuit breaker: after `threshold` consecutive failures an upstream is skipped for
 * `openMs`; then one trial request is let through (half-open) and a success closes it again.
 */
export class CircuitBreaker {
  private readonly state = new Map<string, { failures: number; openUntil: number }>();

  constructor(
    private readonly threshold = 5,
    private readonly openMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

  isOpen(upstream: string): boolean {
    const s = this.state.get(upstream);
    if (!s || s.openUntil === 0) return false;
    if (this.now() >= s.openUntil) {
      // Half-open: allow a trial; a further failure re-opens at once.
      s.openUntil = 0;
      s.failures = this.threshold - 1;
      return false;
    }
    return true;
  }

  success(upstream: string): void {
    this.state.delete(upstream);
  }

  failure(upstream: string): void {
    const s = this.state.get(upstream) ?? { failures: 0, openUntil: 0 };
    s.failures += 1;
    if (s.failures >= this.threshold) s.openUntil = this.now() + this.openMs;
    this.state.set(upstream, s);
  }

  /** Consecutive failures counted so far (0 when closed by a success). */
  failuresOf(upstream: string): number {
    return this.state.get(upstream)?.failures ?? 0;
  }

  /** For the state gauge, without side effects: open, half-open (cool-down over, trial due) or closed. */
  stateOf(upstream: string): 'closed' | 'open' | 'half_open' {
    const s = this.state.get(upstream);
    if (!s || s.openUntil === 0) return 'closed';
    return this.now() >= s.openUntil ? 'half_open' : 'open';
  }
}
