import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { ConfigFile } from './config/schema.js';
import { errors } from './core/errors.js';
import { closeListener } from './http/close-listener.js';
import type { ShutdownState } from './http/shutdown-state.js';
import { LOG_EXIT_FLUSH_MS, logSinkOf } from './ops/logger.js';

export interface GracefulShutdownOptions {
  app: FastifyInstance;
  state: ShutdownState;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** Stops background work (the video refresher), waiting for what it is doing. */
  stopBackground(): Promise<void>;
  /** Flushes batched charges and closes the store, limiter and upstream pools. */
  closeServices(): Promise<void>;
  /** How long in-flight requests get to finish before the process exits regardless. */
  deadlineMs: number;
  signals?: readonly NodeJS.Signals[];
  /** How the process ends on the deadline or a second signal; process.exit outside tests. */
  exit?: (code: number) => void;
}

/**
 * How long before the deadline the requests still in flight are cut: a tenth of it, at most a
 * second. Enough for the cut requests to settle and their charges to be written (a batch of
 * ledger rows), little enough that a request only a little slower than the grace still finishes.
 */
export function cutMarginMs(deadlineMs: number): number {
  return Math.min(1_000, Math.floor(deadlineMs / 10));
}

/**
 * The warning for upstreams whose calls may outlast a drain: a call still waiting on one of them
 * when the requests are cut (cutMarginMs before server.shutdown_timeout_ms) is aborted, and its
 * request answered 503 shutting_down and not billed, though the vendor may bill the work; a video
 * create past its point of no return runs on until the exit and is recovered as after a crash.
 * (A chat stream is cut and billed for what it carried whatever the timeout, which bounds a stall
 * of the stream, not its length.) A warning, not a refusal: the timeout is per upstream and may
 * rightly be long (a slow model), and a drain rarely meets such a call.
 */
export function shutdownTimeoutWarning(cfg: Pick<ConfigFile, 'server' | 'upstreams'>): string | undefined {
  const grace = cfg.server.shutdown_timeout_ms;
  const cutAt = grace - cutMarginMs(grace);
  const long = cfg.upstreams.filter((u) => u.timeout_ms > cutAt);
  if (long.length === 0) return undefined;
  const named = long.slice(0, 5).map((u) => `${u.name} (${u.timeout_ms})`).join(', ') + (long.length > 5 ? `, and ${long.length - 5} more` : '');
  return (
    `upstream timeout_ms reaches past the point where a shutdown cuts the requests in flight (${cutAt} ms, ` +
    `shortly before server.shutdown_timeout_ms ${grace}): ${named}. A call still waiting on one of them then is ` +
    'aborted and its request not billed, though the vendor may bill it; lower timeout_ms or raise server.shutdown_timeout_ms'
  );
}

/**
 * Turns the first SIGTERM/SIGINT/SIGHUP into a drain: readiness flips (ShutdownState), the listener
 * closes so new connections are refused, requests already in flight are answered, then charges
 * are flushed and every service closed. The returned promise resolves with exit code 0 once that
 * is done. SIGHUP too, since its default kills the process on the spot (a closed terminal, a
 * supervisor's hang-up), requests in flight unanswered and acknowledged charges unwritten; the
 * gateway has no configuration to reload on it.
 *
 * Requests still in flight when only `cutMarginMs` of the deadline is left are cut as a client
 * hanging up would cut them (http/lifecycle.ts: a 503 shutting_down, or a stream's last event
 * saying so, billed for what it carried), and the drain goes on to flush their charges; the process
 * then exits with code 1, since requests were cut. Exiting at the deadline itself, with whatever
 * was still being written lost, would leave a stream the client partly received unbilled.
 * A second signal, or the deadline, ends the process at once with code 1: an operator asking
 * twice, or an orchestrator about to SIGKILL, should not wait on a slow client.
 */
export function handleShutdownSignals(opts: GracefulShutdownOptions): Promise<number> {
  // When the drain must be over; set by the first signal.
  let deadlineAt: number | undefined;
  const exit =
    opts.exit ??
    ((code: number) => {
      flushLogs(opts.logger, deadlineAt);
      process.exit(code);
    });
  const signals = opts.signals ?? ['SIGTERM', 'SIGINT', 'SIGHUP'];
  return new Promise<number>((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      if (!opts.state.begin()) {
        opts.logger.warn({ signal }, 'second shutdown signal: exiting now');
        exit(1);
        return;
      }
      deadlineAt = Date.now() + opts.deadlineMs;
      opts.logger.info({ signal, deadline_ms: opts.deadlineMs }, 'shutting down: no new connections, finishing requests in flight');
      const margin = cutMarginMs(opts.deadlineMs);
      let cut = 0;
      let closeAll: NodeJS.Timeout | undefined;
      const cutTimer = setTimeout(() => {
        cut = cutRequests(opts.app);
        if (cut === 0) return;
        opts.logger.warn({ deadline_ms: opts.deadlineMs, cut }, 'shutdown deadline near: cutting the requests still in flight');
        // A connection that outlives the cut (a download that does not hear of it) would hold the
        // listener's close, and with it the flush of the charges, until the exit.
        closeAll = setTimeout(() => opts.app.server.closeAllConnections?.(), Math.floor(margin / 2));
      }, opts.deadlineMs - margin);
      const deadline = setTimeout(() => {
        opts.logger.warn({ deadline_ms: opts.deadlineMs }, 'shutdown deadline passed: exiting with requests unfinished');
        exit(1);
      }, opts.deadlineMs);
      const stopTimers = () => [cutTimer, closeAll, deadline].forEach((t) => clearTimeout(t));
      drain(opts).then(
        () => {
          stopTimers();
          if (cut > 0) {
            opts.logger.warn({ cut }, 'shutdown complete after cutting requests short');
            exit(1);
            return;
          }
          opts.logger.info('shutdown complete');
          // A log reader that stopped taking lines must not hold the exit past the deadline.
          logSinkOf(opts.logger)?.settle?.(logTimeLeft(deadlineAt));
          for (const s of signals) process.off(s, onSignal);
          resolve(0);
        },
        (e: unknown) => {
          // A failure while closing (e.g. the database went away) must still end the process.
          opts.logger.warn({ err: e instanceof Error ? e.message : String(e) }, 'shutdown failed; exiting');
          stopTimers();
          exit(1);
        },
      );
    };
    for (const s of signals) process.on(s, onSignal);
  });
}

async function drain(opts: GracefulShutdownOptions): Promise<void> {
  // Stops listening at once and resolves when every in-flight request has its answer and its
  // connection is closed (keep-alive ones included: see closeListener).
  await Promise.all([closeListener(opts.app), opts.stopBackground()]);
  await opts.closeServices();
}

/** Cuts the app's requests in flight (http/lifecycle.ts); how many. */
function cutRequests(app: FastifyInstance): number {
  return typeof app.cutRequestsInFlight === 'function' ? app.cutRequestsInFlight(errors.shuttingDown()) : 0;
}

/**
 * The logger buffers its writes; an exit that cannot wait must still leave its last lines behind.
 * Bounded (ops/log-destination.ts): a reader that stopped taking them holds the exit at most
 * LOG_EXIT_FLUSH_MS, and not past the drain's deadline.
 */
function flushLogs(logger: unknown, deadlineAt: number | undefined): void {
  try {
    const sink = logSinkOf(logger);
    if (deadlineAt !== undefined) sink?.settle?.(logTimeLeft(deadlineAt));
    sink?.flushSync?.();
  } catch {
    // Not ready yet or not a buffered stream: nothing to flush.
  }
}

/** What the log's last lines may still take: LOG_EXIT_FLUSH_MS, cut to what is left of the drain (a pipe's moment at least). */
function logTimeLeft(deadlineAt: number | undefined): number {
  const left = deadlineAt === undefined ? LOG_EXIT_FLUSH_MS : deadlineAt - Date.now();
  return Math.min(LOG_EXIT_FLUSH_MS, Math.max(LOG_LAST_MOMENT_MS, left));
}

/** Enough for a reader that is there to take the last lines of a full pipe; nothing next to an orchestrator's margin. */
const LOG_LAST_MOMENT_MS = 50;
