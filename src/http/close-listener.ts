import type { FastifyInstance } from 'fastify';

/** How often connections that finished their last answer are closed while a listener closes. */
const IDLE_SWEEP_MS = 100;

/**
 * Closes a listening app: new connections are refused at once, requests in flight get their
 * answers, and resolves once every connection is gone.
 *
 * Node closes idle keep-alive connections once, when the server closes. A connection whose answer
 * was still being written at that moment (a download whose client already has every byte while the
 * file's end is still being read, a scrape waiting on the store) turns idle a moment later and is
 * then left open until the client hangs up or the server's keep-alive timeout (72 s in Fastify)
 * passes: the close waits that long. So idle connections are closed again as they come.
 */
export async function closeListener(app: FastifyInstance): Promise<void> {
  const server = app.server;
  const sweep = setInterval(() => server.closeIdleConnections?.(), IDLE_SWEEP_MS);
  try {
    await app.close();
  } finally {
    clearInterval(sweep);
  }
}
