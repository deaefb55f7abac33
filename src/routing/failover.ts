import { errors, GatewayError } from '../core/errors.js';
import { redactorFor } from '../core/redact.js';
import { TransportError, type Upstream, type UpstreamVerdict } from '../http/types.js';
import { failovers } from '../ops/metrics.js';
import type { CircuitBreaker } from './circuit.js';

/**
 * The longest wait a 502 passes on to clients. An upstream's Retry-After is a hint about that
 * upstream (often a daily quota or a misconfigured proxy); the gateway may have others by the time
 * the client comes back, and a value from a hostile or broken upstream (years ahead) must not park
 * every client. A minute is also what the gateway's own client waits at most (cli/client/api.ts).
 */
export const MAX_PASSED_RETRY_AFTER_SECONDS = 60;

export type AttemptOutcome<T> = { ok: true; value: T } | { ok: false; verdict: UpstreamVerdict };

export interface FailoverOptions {
  circuits?: CircuitBreaker;
  /** Called when a request may have reached the upstream before failing (e.g. a timeout after sending). */
  onMaybeSent?(up: Upstream, err: TransportError): void | Promise<void>;
  /** Called for every failed attempt (logging). */
  onAttemptFailed?(up: Upstream, reason: string): void;
}

/**
 * Tries the candidates in order. Moves on after connection errors, timeouts, 5xx, upstream 429
 * and upstream auth failures; stops at once on a client error or a moderation rejection, which
 * another upstream would only repeat. With nothing left: 504 when the last failure was a timeout,
 * 503 when nothing could be reached, 502 when upstreams answered with errors (`upstream_answer_too_large`
 * when the last one answered more than the gateway reads whole), with the last failure's `clientMessage`
 * when the gateway's own check of its answer wrote one.
 */
export async function withFailover<T>(
  candidates: readonly Upstream[],
  attempt: (up: Upstream) => Promise<AttemptOutcome<T>>,
  opts: FailoverOptions = {},
): Promise<{ value: T; upstream: Upstream }> {
  if (candidates.length === 0) throw errors.upstreamUnavailable();
  let last: 'timeout' | 'connect' | 'answered' | 'too_large' = 'connect';
  let retryAfter: number | undefined;
  // The gateway's own account of the last answered failure, when it has one for the client.
  let lastMessage: string | undefined;
  for (const up of candidates) {
    let outcome: AttemptOutcome<T>;
    try {
      outcome = await attempt(up);
    } catch (e) {
      if (e instanceof GatewayError) throw e;
      if (!(e instanceof TransportError)) throw e;
      if (e.reason === 'aborted') throw e;
      // An answer over the gateway's read cap says as much about the request (2,048 inputs of a large
      // model) as about the upstream: counted against the circuit, one client's requests would move
      // every account's traffic off a healthy upstream. The next candidate is still tried.
      if (e.reason !== 'too_large') opts.circuits?.failure(up.name);
      failovers.inc({ upstream: up.name, reason: e.reason });
      opts.onAttemptFailed?.(up, `${e.reason}: ${redactorFor(up).message(e.message)}`);
      if (e.maybeSent) await opts.onMaybeSent?.(up, e);
      // A connection failure does not hide that an earlier upstream answered (too much, or with an error).
      if (e.reason !== 'connect') lastMessage = undefined;
      if (e.reason === 'timeout' || e.reason === 'too_large') last = e.reason;
      else if (e.reason === 'connect') last = last === 'timeout' ? 'connect' : last;
      else last = 'answered';
      continue;
    }
    if (outcome.ok) {
      opts.circuits?.success(up.name);
      return { value: outcome.value, upstream: up };
    }
    const v = outcome.verdict;
    // Whatever the upstream said reaches the client or the log from here: never its credentials.
    const redactor = redactorFor(up);
    const message = redactor.message(v.message);
    switch (v.kind) {
      case 'client':
        opts.circuits?.success(up.name);
        // The vendor's message is passed on; its own code is not part of our catalogue.
        throw new GatewayError(v.status, 'invalid_request_error', message, { code: 'upstream_rejected', param: redactor.optional(v.param) });
      case 'moderation':
        opts.circuits?.success(up.name);
        throw errors.contentPolicy(message);
      case 'retryable':
      case 'auth':
        if (v.kind === 'auth' || !v.sparesCircuit) opts.circuits?.failure(up.name);
        failovers.inc({ upstream: up.name, reason: v.kind });
        opts.onAttemptFailed?.(up, `${v.kind} ${v.status}: ${message}`);
        if (v.kind === 'retryable') retryAfter = longerWait(retryAfter, v.retryAfterSeconds);
        lastMessage = v.kind === 'retryable' ? v.clientMessage : undefined;
        last = 'answered';
        break;
    }
  }
  if (last === 'timeout') throw errors.upstreamTimeout();
  if (last === 'too_large') throw errors.upstreamAnswerTooLarge();
  if (last === 'connect') throw errors.upstreamUnavailable();
  const err = errors.upstreamError(lastMessage ?? 'Every upstream for this model failed; try again shortly.');
  if (retryAfter !== undefined) err.headers['retry-after'] = String(Math.ceil(retryAfter));
  return Promise.reject(err);
}

/** The longer of two waits, capped; a wait that is not a positive finite number is no wait. */
function longerWait(sofar: number | undefined, wait: number | undefined): number | undefined {
  if (wait === undefined || !Number.isFinite(wait) || wait <= 0) return sofar;
  return Math.min(MAX_PASSED_RETRY_AFTER_SECONDS, Math.max(sofar ?? 0, wait));
}
