import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { errors, GatewayError, isGatewayError } from '../core/errors.js';
import { TransportError } from './types.js';

/**
 * Maps anything thrown while serving a request to a GatewayError: ours as they are, the
 * framework's own (bad JSON, body too large, wrong content type) to their spec status, and
 * everything else to a 500 that says nothing about internals.
 */
export function toGatewayError(err: unknown, bodyLimit: number): GatewayError {
  if (isGatewayError(err)) return err;
  const e = err as FastifyError & { statusCode?: number };
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

export function sendError(reply: FastifyReply, err: GatewayError): FastifyReply {
  return reply.code(err.status).headers({ ...err.headers, 'content-type': 'application/json; charset=utf-8' }).send(err.toBody());
}

/** Logs 5xx with details (server side only); 4xx are the client's business. */
export function logError(req: FastifyRequest, original: unknown, rendered: GatewayError): void {
  // A client that hung up cancelled its own upstream call: nothing failed on our side.
  if (original instanceof TransportError && original.reason === 'aborted') return;
  if (rendered.status >= 500) req.log.error({ err: original }, 'request failed');
}
