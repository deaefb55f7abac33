/**
 * One store read answering every scrape that asks while it runs, and for `windowMs` after it began:
 * scrapes that arrive together (several Prometheus servers, or a scrape on each listener) share it
 * rather than repeating it. A failed read is not kept. Reads are kept per owner (the store).
 */
export class SharedRead<T> {
  private readonly last = new WeakMap<object, { at: number; read: Promise<T>; running: boolean }>();

  constructor(private readonly windowMs: number) {}

  get(owner: object, read: () => Promise<T>, at: number): Promise<T> {
    const last = this.last.get(owner);
    if (last && (last.running || at - last.at < this.windowMs)) return last.read;
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
