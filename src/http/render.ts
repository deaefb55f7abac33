import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { errors, GatewayError, isGatewayError, isStoreOutage } from '../core/errors.js';
import { toTransportError } from './executor.js';
import { TransportError } from './types.js';

/** Errors an upstream body can fail with after its headers (undici's own, or the socket's). */
const UPSTREAM_STREAM_CODES = /^(UND_ERR_|ECONNRESET$|EPIPE$|ERR_STREAM_PREMATURE_CLOSE$)/;

/**
 * Maps anything thrown while serving a request to a GatewayError: ours as they are, the
 * framework's own (bad JSON, body too large, wrong content type) to their spec status, and
 * everything else to a 500 that says nothing about internals.
 */
export function toGatewayError(err: unknown, bodyLimit: number): GatewayError {
  if (isGatewayError(err)) return err;
  const e = err as FastifyError & { statusCode?: number };
  // An upstream that failed: a transport failure from the executor, or a body that broke before
  // the first byte reached the client (e.g. a video download).
  if (err instanceof TransportError) return fromTransport(err);
  // Before the stream codes below: a database connection reset is not an upstream's failure.
  // Also SQLite locked by another process (a backup, a `sqlite3` shell in a write transaction) past
  // the busy timeout, or unable to write (a full disk): the statement was not applied, and a retry
  // after the lock is let go, or room is made, works.
  if (isStoreOutage(err)) return errors.storeUnavailable();
  if (typeof e?.code === 'string' && UPSTREAM_STREAM_CODES.test(e.code)) return fromTransport(toTransportError(err, true));
  switch (e?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.bodyTooLarge(bodyLimit);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return errors.invalidJson('The request body is empty; send a JSON object.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errors.invalidRequest('Send the body as application/json.', undefined, 'unsupported_media_type');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return errors.invalidRequest('The Content-Length header does not match the body.', undefined, 'invalid_content_length');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return errors.invalidJson('The request body is not valid JSON.');
  }
  if (e instanceof SyntaxError || e?.statusCode === 400) {
    const proto = /prototype|__proto__|constructor/i.test(String(e?.message));
    return proto
      ? errors.invalidRequest('The body contains a forbidden key (__proto__ or constructor.prototype).', undefined, 'forbidden_key')
      : errors.invalidJson('The request body is not valid JSON.');
  }
  if (e?.statusCode === 413) return errors.bodyTooLarge(bodyLimit);
  if (e?.statusCode === 408) return errors.requestTimeout();
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500)
    return errors.invalidRequest('The request could not be processed.', undefined, 'bad_request');
  return errors.internal();
}

function fromTransport(err: TransportError): GatewayError {
  switch (err.reason) {
    case 'timeout':
      return errors.upstreamTimeout();
    case 'connect':
      return errors.upstreamUnavailable('The upstream could not be reached.');
    case 'aborted':
      return errors.requestTimeout('The request ended before its answer was ready.');
    default:
      return errors.upstreamError('The upstream connection failed.');
  }
}

export function sendError(reply: FastifyReply, err: GatewayError): FastifyReply {
  return reply.code(err.status).headers({ ...err.headers, 'content-type': 'application/json; charset=utf-8' }).send(err.toBody());
}

/**
 * Whether `err` is the request body breaking because its client hung up mid-body: Node's
 * IncomingMessage fails with ECONNRESET "aborted". The same code from an upstream is the upstream's
 * failure (a 502); this one is the client leaving, answered by no one: its connection's close
 * writes the access line (status 499, lifecycle.ts), and nothing is logged as an error.
 */
export function clientHungUp(req: FastifyRequest, err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === 'ECONNRESET' && e.message === 'aborted' && (req.raw.destroyed || req.raw.socket?.destroyed === true);
}

/** Logs 5xx with details (server side only); 4xx are the client's business. */
export function logError(req: FastifyRequest, original: unknown, rendered: GatewayError): void {
  if (clientHungUp(req, original)) return;
  // A client that hung up cancelled its own upstream call: nothing failed on our side. Work the
  // gateway does itself (e.g. making a thumbnail) ends the same way, with an AbortError.
  if (original instanceof TransportError && original.reason === 'aborted') return;
  if ((original as { name?: unknown } | null)?.name === 'AbortError' && clientGone(req)) return;
  // A request refused because the instance is draining is the drain working, not a failure.
  if (rendered.status >= 500 && rendered.code !== 'shutting_down') req.log.error({ err: original }, 'request failed');
}

function clientGone(req: FastifyRequest): boolean {
  return req.raw.destroyed || req.raw.socket?.destroyed === true;
}
