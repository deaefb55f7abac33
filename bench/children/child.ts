/**
 * The child side of bench/lib/children.ts: read the options, report ready (or the error that
 * prevented it), and exit cleanly on SIGTERM or when the parent goes away.
 */

export function childOptions<T>(): T {
  const raw = process.env['BENCH_CHILD_OPTIONS'];
  if (!raw) throw new Error('BENCH_CHILD_OPTIONS is not set: this script is started by bench/run.ts');
  return JSON.parse(raw) as T;
}

export function ready(info: unknown): void {
  process.send?.({ ready: info });
}

/**
 * Runs `main`, reporting its result to the parent; `close` runs on SIGTERM or when the parent's
 * IPC channel closes, then the process exits normally (which is when --cpu-prof writes its file).
 */
export function runChild(main: () => Promise<{ info: unknown; close: () => Promise<void> }>): void {
  let closing = false;
  let close: (() => Promise<void>) | undefined;
  const stop = (): void => {
    if (closing) return;
    closing = true;
    // Never hang on a stuck close: the parent kills us after its grace period anyway.
    setTimeout(() => process.exit(0), 3_000).unref();
    (close ? close() : Promise.resolve()).catch(() => undefined).finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.once('disconnect', stop);
  main().then(
    (r) => {
      close = r.close;
      ready(r.info);
    },
    (e: unknown) => {
      process.send?.({ error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
      process.exit(1);
    },
  );
}
