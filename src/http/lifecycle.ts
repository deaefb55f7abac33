import type { FastifyInstance } from 'fastify';
import { errors } from '../core/errors.js';
import { sendError } from './render.js';
import '../auth/types.js';

/**
 * Gives every request an abort signal and a deadline. Requests that outlive `timeoutMs` get a 408
 * in the spec's shape (not a dropped socket) and their upstream work is aborted, unless they
 * committed to finishing (`req.commit()`, e.g. once a video job holding money exists). A client
 * that leaves before its answer is complete aborts the signal too.
 */
export function installRequestLifecycle(app: FastifyInstance, timeoutMs: number): void {
  app.decorateRequest('abortSignal', null as unknown as AbortSignal);
  app.decorateRequest('commit', null as unknown as () => void);
  app.addHook('onRequest', async (req, reply) => {
    const ac = new AbortController();
    let committed = false;
    req.abortSignal = ac.signal;
    const t = setTimeout(() => {
      if (committed || reply.sent || reply.raw.headersSent) return;
      ac.abort();
      void sendError(reply, errors.requestTimeout());
    }, timeoutMs);
    t.unref();
    req.commit = () => {
      committed = true;
      clearTimeout(t);
    };
    reply.raw.once('close', () => {
      clearTimeout(t);
      // The client left before the answer was complete: stop what is being done for it.
      if (!reply.raw.writableFinished) ac.abort();
    });
  });
}
