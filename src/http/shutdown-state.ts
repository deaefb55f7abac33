/**
 * Whether this process has begun shutting down. Readiness checks read it (a load balancer should
 * stop sending new traffic as soon as the drain starts, while in-flight requests still finish),
 * and anything that must react at that moment subscribes with `onShutdown`.
 */
export class ShutdownState {
  private begun = false;
  private readonly listeners = new Set<() => void>();

  isShuttingDown(): boolean {
    return this.begun;
  }

  /** Runs `fn` when the shutdown begins (at once if it already has); returns an unsubscribe. */
  onShutdown(fn: () => void): () => void {
    if (this.begun) {
      fn();
      return () => undefined;
    }
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Marks the start of the shutdown; true only for the first call. A throwing listener stops no other. */
  begin(): boolean {
    if (this.begun) return false;
    this.begun = true;
    for (const fn of this.listeners) {
      try {
        fn();
      } catch {
        // A listener's failure must not stop the drain.
      }
    }
    this.listeners.clear();
    return true;
  }
}
