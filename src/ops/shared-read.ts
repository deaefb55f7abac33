/**
 * One store read answering every scrape that asks for `windowMs` after it began: scrapes that arrive
 * together (several Prometheus servers, or a scrape on each listener) share it rather than repeating
 * it. A read still running past the window is joined up to `maxRunningMs`, no longer: one that never
 * settles must not answer every later scrape. A failed read is not kept. Reads are kept per owner
 * (the store). (core/shared-flights.ts shares only reads in flight; this one also keeps an answer.)
 */
export class SharedRead<T> {
  private readonly last = new WeakMap<object, { at: number; read: Promise<T>; running: boolean }>();

  constructor(
    private readonly windowMs: number,
    private readonly maxRunningMs = 10_000,
  ) {}

  get(owner: object, read: () => Promise<T>, at: number): Promise<T> {
    const last = this.last.get(owner);
    if (last && (at - last.at < this.windowMs || (last.running && at - last.at < this.maxRunningMs))) return last.read;
    const entry = { at, read: read(), running: true };
    this.last.set(owner, entry);
    entry.read.then(
      () => (entry.running = false),
      () => {
        entry.running = false;
        if (this.last.get(owner) === entry) this.last.delete(owner);
      },
    );
    return entry.read;
  }
}
