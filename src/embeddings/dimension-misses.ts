/**
 * Upstreams that recently answered vectors of another length than a request's `dimensions` (one that
 * ignores the parameter, or cannot make that size). Such an answer is the upstream's failure and is
 * not billed (run.ts), so without a memory a client repeating the request would have every upstream of
 * the model work for nothing each time. For `ttlMs` after a miss, that upstream is skipped for
 * requests of the same model and size; a request whose every candidate is skipped is a 400 before
 * any call. A miss on another size, or an upstream that honours the size, is unaffected.
 */
export class DimensionMisses {
  /** `upstream \0 model \0 size` -> when the memory of the miss ends. */
  private readonly misses = new Map<string, number>();

  constructor(
    private readonly now: () => number,
    private readonly ttlMs = 10 * 60_000,
    /** Entries kept at most (a client cycling sizes cannot grow it past this). */
    private readonly max = 4_096,
  ) {}

  record(upstream: string, model: string, size: number): void {
    if (this.misses.size >= this.max) this.dropExpired();
    if (this.misses.size >= this.max) this.misses.delete(this.misses.keys().next().value!);
    this.misses.set(keyOf(upstream, model, size), this.now() + this.ttlMs);
  }

  /** Whether `upstream` answered another length for this model and size within the memory's span. */
  skips(upstream: string, model: string, size: number): boolean {
    if (this.misses.size === 0) return false;
    const key = keyOf(upstream, model, size);
    const until = this.misses.get(key);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.misses.delete(key);
    return false;
  }

  private dropExpired(): void {
    const now = this.now();
    for (const [key, until] of this.misses) if (until <= now) this.misses.delete(key);
  }
}

function keyOf(upstream: string, model: string, size: number): string {
  return `${upstream}\0${model}\0${size}`;
}
