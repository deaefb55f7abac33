import type { IncomingMessage } from 'node:http';
import { randomUuid } from '../core/uuid.js';

/**
 * What a client's own x-request-id may look like to be kept: short, printable, no spaces or
 * separators that could split a log line or a header. Anything else is replaced by a new id.
 */
const SANE_ID = /^[A-Za-z0-9._:\-]{1,128}$/;

export const REQUEST_ID_HEADER = 'x-request-id';

/** The request's id: the client's own when it is sane, else a fresh UUID. */
export function requestIdFor(req: IncomingMessage): string {
  const given = req.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && SANE_ID.test(given) ? given : randomUuid();
}
