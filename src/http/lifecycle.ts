import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { errors } from '../core/errors.js';
import { attachHold, RequestHold } from './answer-budget.js';
import { sendError } from './render.js';
import '../auth/types.js';

/**
 * One request's deadline, abort signal and answer-memory hold. The signal (and the hold that
 * travels with it) is made only when a route asks for `req.abortSignal`: a poll answered from the
 * store never does, and an AbortController plus its hold is most of what this costs per request.
 * A signal asked for after the request was aborted (client gone, deadline passed) starts aborted,
 * and a hold asked for after the answer is over starts released, so a late caller sees the same
 * state an early one would.
 */
export class RequestLife {
  private controller?: AbortController;
  private hold?: RequestHold;
  private aborted = false;
  private over = false;

  constructor(
    readonly reply: FastifyReply,
    readonly deadline: number,
    /** The requests the deadline sweep watches; this one leaves it once over or committed. */
    private readonly inflight: Set<RequestLife>,
  ) {
    inflight.add(this);
  }

  commit(): void {
    this.inflight.delete(this);
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      // Upstream answers read for this request hold their memory budget until its answer is over.
      this.hold = new RequestHold();
      attachHold(this.controller.signal, this.hold);
      if (this.over) this.hold.release();
      if (this.aborted) this.controller.abort();
    }
    return this.controller.signal;
  }

  abort(): void {
    this.aborted = true;
    this.controller?.abort();
  }

  /** The response is over (sent, or the connection went away): give back what the request held. */
  end(finished: boolean): void {
    this.over = true;
    this.inflight.delete(this);
    this.hold?.release();
    // The client left before the answer was complete: stop what is being done for it.
    if (!finished) this.abort();
  }
}

const LIFE = Symbol('requestLife');
type WithLife = ServerResponse & { [LIFE]?: RequestLife };

/** One listener function for every response (no closure per request); `this` is the response. */
function onResponseClose(this: WithLife): void {
  this[LIFE]?.end(this.writableFinished);
}

/**
 * Gives every request an abort signal and a deadline. Requests that outlive `timeoutMs` get a 408
 * in the spec's shape (not a dropped socket) and their upstream work is aborted, unless they
 * committed to finishing (`req.commit()`, e.g. once a video job holding money exists). A client
 * that leaves before its answer is complete aborts the signal too.
 */
export function installRequestLifecycle(app: FastifyInstance, timeoutMs: number): void {
  // One sweep for every in-flight request instead of a timer each (cheaper at thousands of
  // requests a second); deadlines are kept to within the sweep period.
  const inflight = new Set<RequestLife>();
  const sweepMs = Math.max(10, Math.min(250, Math.floor(timeoutMs / 4)));
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const life of inflight) {
      if (life.deadline <= now) {
        inflight.delete(life);
        expire(life);
      }
    }
  }, sweepMs);
  sweep.unref();
  app.addHook('onClose', async () => clearInterval(sweep));

  function expire(life: RequestLife): void {
    const { reply } = life;
    if (reply.sent || reply.raw.headersSent) return;
    life.abort();
    void sendError(reply, errors.requestTimeout());
  }

  app.decorateRequest('requestLife', null as unknown as RequestLife);
  app.decorateRequest('abortSignal', {
    getter(this: { requestLife: RequestLife }) {
      return this.requestLife?.signal;
    },
  });
  app.decorateRequest('commit', function commit(this: { requestLife: RequestLife }) {
    this.requestLife?.commit();
  });
  app.addHook('onRequest', (req, reply, done) => {
    const life = new RequestLife(reply, Date.now() + timeoutMs, inflight);
    req.requestLife = life;
    const raw = reply.raw as WithLife;
    raw[LIFE] = life;
    raw.on('close', onResponseClose);
    done();
  });
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Internal to lifecycle.ts: the request's deadline, signal and hold. */
    requestLife: RequestLife;
  }
}
