/**
 * What a start-up has opened so far (a database, a connection pool, a listener, a tracer), to be
 * closed last-first should a later step fail. Left open they would keep the process alive after the
 * error was printed (a PostgreSQL pool's idle connections, a Redis socket), hold the SQLite file,
 * and make a second start in the same process trip over the first.
 *
 * A failure to close one piece is reported and the rest are closed still: the caller must see the
 * error that stopped the start, not one met while cleaning up after it.
 */
export class StartRollback {
  private readonly steps: Array<{ what: string; close: () => unknown }> = [];

  constructor(private readonly report: (what: string, error: unknown) => void) {}

  /** Records `close` for something just opened (`what` names it in a report). */
  add(what: string, close: () => unknown): void {
    this.steps.push({ what, close });
  }

  /** The start succeeded: from here on the normal shutdown closes everything. */
  release(): void {
    this.steps.length = 0;
  }

  /** Closes what was recorded, last first, each awaited; reports (never throws) a close that fails. */
  async closeAll(): Promise<void> {
    for (const { what, close } of this.steps.splice(0).reverse()) {
      try {
        await close();
      } catch (e) {
        try {
          this.report(what, e);
        } catch {
          // A report that cannot be written must not stop the rest from closing.
        }
      }
    }
  }

  /** Runs `start`; if it throws, closes what was recorded and throws that same error. */
  async guard<T>(start: () => Promise<T>): Promise<T> {
    try {
      return await start();
    } catch (e) {
      await this.closeAll();
      throw e;
    }
  }
}

/** A close error's text for a report (its message, not a stack). */
export function closeErrorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
