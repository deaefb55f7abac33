/**
 * Work in flight by key, joined by every caller that asks for the same key while it runs: after an
 * idle spell the first requests of a burst all miss an expired cache, and each asking the store on
 * its own sent a herd of identical queries. A caller joins only work that started less than
 * `maxAgeMs` before it asked, so a slow store cannot pass an old answer off as fresh; `clear` drops
 * everything in flight, so nobody asking after an invalidation joins work from before it. Settled
 * work (answer or failure) leaves at once: failures are never shared with later callers.
 */
export class SharedFlights<K, V> {
  private readonly running = new Map<K, { value: Promise<V>; at: number }>();

  constructor(private readonly maxAgeMs: number) {}

  /** The work running for `key` if it is young enough at `now`, else `start()` made the one to join. */
  join(key: K, now: number, start: () => Promise<V>): Promise<V> {
    const running = this.running.get(key);
    if (running && now - running.at < this.maxAgeMs) return running.value;
    const flight = { value: start(), at: now };
    this.running.set(key, flight);
    const done = (): void => {
      if (this.running.get(key) === flight) this.running.delete(key);
    };
    flight.value.then(done, done);
    return flight.value;
  }

  clear(): void {
    this.running.clear();
  }
}
