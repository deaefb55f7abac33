import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { closeListener } from './http/close-listener.js';
import type { ShutdownState } from './http/shutdown-state.js';

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
 * Turns the first SIGTERM/SIGINT into a drain: readiness flips (ShutdownState), the listener
 * closes so new connections are refused, requests already in flight are answered, then charges
 * are flushed and every service closed. The returned promise resolves with exit code 0 once that
 * is done. A second signal, or the deadline, ends the process at once with code 1: an operator
 * asking twice, or an orchestrator about to SIGKILL, should not wait on a slow client.
 */
export function handleShutdownSignals(opts: GracefulShutdownOptions): Promise<number> {
  const exit =
    opts.exit ??
    ((code: number) => {
      flushLogs(opts.logger);
      process.exit(code);
    });
  const signals = opts.signals ?? ['SIGTERM', 'SIGINT'];
  return new Promise<number>((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      if (!opts.state.begin()) {
        opts.logger.warn({ signal }, 'second shutdown signal: exiting now');
        exit(1);
        return;
      }
      opts.logger.info({ signal, deadline_ms: opts.deadlineMs }, 'shutting down: no new connections, finishing requests in flight');
      const deadline = setTimeout(() => {
        opts.logger.warn({ deadline_ms: opts.deadlineMs }, 'shutdown deadline passed: exiting with requests unfinished');
        exit(1);
      }, opts.deadlineMs);
      drain(opts).then(
        () => {
          clearTimeout(deadline);
          for (const s of signals) process.off(s, onSignal);
          resolve(0);
        },
        (e: unknown) => {
          // A failure while closing (e.g. the database went away) must still end the process.
          opts.logger.warn({ err: e instanceof Error ? e.message : String(e) }, 'shutdown failed; exiting');
          clearTimeout(deadline);
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
  opts.logger.info('shutdown complete');
}

/** The logger buffers its writes; an exit that cannot wait must still leave its last lines behind. */
function flushLogs(logger: unknown): void {
  try {
    const stream = (logger as Record<symbol, { flushSync?: () => void } | undefined>)[pino.symbols.streamSym];
    stream?.flushSync?.();
  } catch {
    // Not ready yet or not a buffered stream: nothing to flush.
  }
}
