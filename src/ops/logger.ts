import pino, { type Logger } from 'pino';
import type { ConfigFile } from '../config/schema.js';
import { compileSecrets, redact } from '../core/redact.js';

/** Where log lines go: stdout by default; tests pass a sink to read every line. */
export interface LogSink {
  write(line: string): unknown;
  flush?(cb?: (err?: Error) => void): unknown;
  /** Writes what is buffered before returning (an exit that cannot wait; see src/shutdown.ts). */
  flushSync?(): unknown;
}

/** The longest a log line waits in the logger's buffer before it is written (ms). */
export const LOG_FLUSH_MS = 250;

export function createLogger(level: ConfigFile['log_level'], opts: { secrets?: Iterable<string>; sink?: LogSink } = {}): Logger {
  // Buffered, asynchronous writes: a log line must not cost a write(2) on the request path. Under
  // load a write goes out per 4 KB; on a quiet gateway the buffer would hold its last lines until
  // 4 KB more arrived (minutes, or never), so it is also written every LOG_FLUSH_MS. Flushed on
  // close and at exit; `silent` needs no destination at all.
  const out: LogSink | undefined =
    opts.sink ?? (level === 'silent' ? undefined : pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: LOG_FLUSH_MS }));
  // Every line passes the one redaction, whatever logged it: upstream messages quote credentials.
  const secrets = compileSecrets(opts.secrets ?? []);
  const dest = out && {
    write: (line: string) => out.write(redact(line, secrets)),
    flush: (cb?: (err?: Error) => void) => (out.flush ? out.flush(cb) : cb?.()),
    flushSync: () => out.flushSync?.(),
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
