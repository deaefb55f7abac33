import pino, { type Logger } from 'pino';
import type { ConfigFile } from '../config/schema.js';
import { compileSecrets, redact } from '../core/redact.js';
import { logDestination } from './log-destination.js';

export { LOG_EXIT_FLUSH_MS, LOG_FLUSH_MS } from './log-destination.js';

/** Where log lines go: stdout by default; tests pass a sink to read every line. */
export interface LogSink {
  write(line: string): unknown;
  flush?(cb?: (err?: Error) => void): unknown;
  /** Writes what is buffered before returning (an exit that cannot wait; see src/shutdown.ts). */
  flushSync?(): unknown;
  /** The end of a shutdown: what a stalled reader has not taken within `ms` is dropped (log-destination.ts). */
  settle?(ms: number): unknown;
}

export function createLogger(level: ConfigFile['log_level'], opts: { secrets?: Iterable<string>; sink?: LogSink } = {}): Logger {
  // Buffered and asynchronous, flushed on close and at exit, and never in the way of serving when
  // stdout fails or stalls (log-destination.ts). `silent` needs no destination at all.
  const out: LogSink | undefined = opts.sink ?? (level === 'silent' ? undefined : logDestination());
  // Every line passes the one redaction, whatever logged it: upstream messages quote credentials.
  const secrets = compileSecrets(opts.secrets ?? []);
  const dest = out && {
    write: (line: string) => out.write(redact(line, secrets)),
    flush: (cb?: (err?: Error) => void) => (out.flush ? out.flush(cb) : cb?.()),
    flushSync: () => out.flushSync?.(),
    settle: (ms: number) => out.settle?.(ms),
  };
  return pino({
    level,
    redact: { paths: ['req.headers.authorization', 'req.headers["api-key"]', 'headers.authorization', 'apiKey', 'api_key', 'key'], censor: '[redacted]' },
    serializers: {
      // Query strings may carry signed-link signatures: log the path only.
      req: (r: { method?: string; url?: string }) => ({ method: r.method, url: String(r.url ?? '').split('?')[0] }),
    },
  }, dest as never);
}

/** The sink a logger made here writes to (pino keeps it under this symbol); undefined for `silent`. */
export function logSinkOf(logger: unknown): LogSink | undefined {
  try {
    return (logger as Record<symbol, LogSink | undefined>)[pino.symbols.streamSym];
  } catch {
    return undefined;
  }
}
