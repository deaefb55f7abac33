import type { FastifyInstance } from 'fastify';
import { errors } from '../core/errors.js';
import { attachHold, RequestHold } from './answer-budget.js';
import { sendError } from './render.js';
import '../auth/types.js';

/**
 * Gives every request an abort signal and a deadline. Requests that outlive `timeoutMs` get a 408
 * in the spec's shape (not a dropped socket) and their upstream work is aborted, unless they
 * committed to finishing (`req.commit()`, e.g. once a video job holding money exists). A client
 * that leaves before its answer is complete aborts the signal too.
 */
export function installRequestLifecycle(app: FastifyInstance, timeoutMs: number): void {
  // One sweep for every in-flight request instead of a timer each (cheaper at thousands of
  // requests a second); deadlines are kept to within the sweep period.
  const inflight = new Set<{ deadline: number; expire(): void }>();
  const sweepMs = Math.max(10, Math.min(250, Math.floor(timeoutMs / 4)));
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const e of inflight) {
      if (e.deadline <= now) {
        inflight.delete(e);
        e.expire();
      }
    }
  }, sweepMs);
  sweep.unref();
  app.addHook('onClose', async () => clearInterval(sweep));

  app.decorateRequest('abortSignal', null as unknown as AbortSignal);
  app.decorateRequest('commit', null as unknown as () => void);
  app.addHook('onRequest', async (req, reply) => {
    const ac = new AbortController();
    req.abortSignal = ac.signal;
    // Upstream answers read for this request hold their memory budget until its answer is over.
    const hold = new RequestHold();
    attachHold(ac.signal, hold);
    const entry = {
      deadline: Date.now() + timeoutMs,
      expire() {
        if (reply.sent || reply.raw.headersSent) return;
        ac.abort();
        void sendError(reply, errors.requestTimeout());
      },
    };
    inflight.add(entry);
    req.commit = () => inflight.delete(entry);
    reply.raw.once('close', () => {
      inflight.delete(entry);
      hold.release();
      // The client left before the answer was complete: stop what is being done for it.
      if (!reply.raw.writableFinished) ac.abort();
    });
  });
}
