import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { errors } from '../../src/core/errors.js';
import { logError } from '../../src/http/render.js';

/** Which failures are logged as the gateway's own errors: not the work a departed client cancelled. */
function request(destroyed: boolean) {
  const lines: unknown[] = [];
  const req = { raw: { destroyed, socket: { destroyed } }, log: { error: (...a: unknown[]) => lines.push(a) } } as unknown as FastifyRequest;
  return { req, lines };
}

const abortError = () => Object.assign(new Error('This operation was aborted'), { name: 'AbortError' });

describe('logError', () => {
  it('logs nothing for work the client cancelled by hanging up', () => {
    const { req, lines } = request(true);
    logError(req, abortError(), errors.internal());
    expect(lines).toHaveLength(0);
  });

  it('still logs an abort while the client is there (a timeout of our own), and any other failure', () => {
    const present = request(false);
    logError(present.req, abortError(), errors.internal());
    expect(present.lines).toHaveLength(1);
    const gone = request(true);
    logError(gone.req, new Error('disk full'), errors.internal());
    expect(gone.lines).toHaveLength(1);
  });
});
