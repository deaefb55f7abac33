import type { Bindings, ChildLoggerOptions } from 'pino';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { LogController } from 'fastify';

/** The field every line about a request carries its id in (the access line's `request_id` below). */
const REQUEST_ID_LOG_LABEL = 'request_id';
type LogMethod = (...args: unknown[]) => void;
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/**
 * The per-request logger (`req.log`, `reply.log`), made only when something logs through it.
 * Fastify makes a pino child for every request, which costs an object and the serialised bindings
 * each time; most requests log nothing but the access line, which `AccessLog` writes through the
 * parent with the same `request_id` field (the same bytes: a child's bindings come right before
 * the logged object's fields). A route with its own log level gets its child at once, since the
 * level decides what it writes.
 */
export class LazyRequestLogger implements FastifyBaseLogger {
  private made?: FastifyBaseLogger;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get real(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  get level(): string {
    return this.real.level;
  }

  set level(value: string) {
    this.real.level = value;
  }

  private write(level: Level, args: unknown[]): void {
    const real = this.real;
    (real[level] as LogMethod).apply(real, args);
  }

  // Prototype methods, not arrow fields: nothing is made per request beyond this object.
  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(...args: unknown[]): void {
    this.write('silent', args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: a lazy child, or a real one for a route with its own level. */
export function lazyRequestLogger(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  if (options.level !== undefined) return parent.child(bindings, options);
  return new LazyRequestLogger(parent, bindings, options);
}

/**
 * One access line per request ("request completed", with status and time) instead of two,
 * written through the app's logger with the request id (so the request's own logger need not exist).
 */
export class AccessLog extends LogController {
  constructor(private readonly logger: FastifyBaseLogger) {
    super({ requestIdLogLabel: REQUEST_ID_LOG_LABEL });
  }

  override incomingRequest(_req: FastifyRequest, _reply: FastifyReply): void {}

  /** Requests already logged as aborted: Fastify may still call requestCompleted for them (a write error). */
  private readonly aborted = new WeakSet<FastifyReply>();

  override requestCompleted(_err: Error | null | undefined, req: FastifyRequest, reply: FastifyReply): void {
    if (this.aborted.has(reply)) return;
    this.logger.info({ request_id: req.id, method: req.method, path: pathOf(req), status: reply.statusCode, ms: elapsedMs(reply) }, 'request completed');
  }

  /**
   * A request whose connection closed before its answer was complete (the client hung up or timed
   * out, or the gateway cut it): Fastify writes no line for it, yet it may have cost upstream work.
   * Its status is the one being sent, or 499 (nginx's "client closed request") when none was.
   */
  requestAborted(reply: FastifyReply): void {
    if (this.aborted.has(reply)) return;
    this.aborted.add(reply);
    const req = reply.request;
    const status = reply.raw.headersSent ? reply.statusCode : 499;
    this.logger.info({ request_id: req.id, method: req.method, path: pathOf(req), status, ms: elapsedMs(reply), aborted: true }, 'request aborted');
  }
}

/** The path only: query strings may carry signed-link signatures. */
function pathOf(req: FastifyRequest): string {
  const q = req.url.indexOf('?');
  return q < 0 ? req.url : req.url.slice(0, q);
}

function elapsedMs(reply: FastifyReply): number {
  return Math.round(reply.elapsedTime * 10) / 10;
}
