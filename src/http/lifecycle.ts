import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { errors } from '../core/errors.js';
import { attachHold, RequestHold } from './answer-budget.js';
import type { CallSignal } from './call-signal.js';
import { InflightList, type InflightNode } from './inflight-list.js';
import { sendError } from './render.js';
import '../auth/types.js';

/**
 * One request's deadline, abort signal and answer-memory hold. The request itself is a CallSignal
 * (`req.callSignal`, call-signal.ts): upstream calls that take one hear of its abort through a plain
 * listener list, and find its hold in `answerHold`, with no AbortController. A real AbortSignal
 * (`req.abortSignal`) is made only when a route asks for one; a poll answered from the store asks
 * for neither. A signal or hold asked for late starts in the request's state: aborted once the
 * request was (client gone, deadline passed), released once its answer is over.
 */
export class RequestLife implements CallSignal, InflightNode<RequestLife> {
  private controller?: AbortController;
  private hold?: RequestHold;
  /** Listeners added through the CallSignal face; most requests have at most one at a time. */
  private listeners?: (() => void)[];
  private isAborted = false;
  private over = false;
  /** A CallSignal's reason: the request's abort carries none (the call fails as an AbortError). */
  readonly reason = undefined;
  // The deadline sweep's list (inflight-list.ts).
  prevInflight: RequestLife | undefined = undefined;
  nextInflight: RequestLife | undefined = undefined;
  listed = false;

  constructor(
    readonly reply: FastifyReply,
    readonly deadline: number,
    /** The requests the deadline sweep watches; this one leaves it once over or committed. */
    private readonly inflight: InflightList<RequestLife>,
  ) {
    inflight.add(this);
  }

  commit(): void {
    this.inflight.delete(this);
  }

  get aborted(): boolean {
    return this.isAborted;
  }

  /** Upstream answers read for this request hold their memory budget until its answer is over. */
  get answerHold(): RequestHold {
    if (!this.hold) {
      this.hold = new RequestHold();
      if (this.over) this.hold.release();
    }
    return this.hold;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      attachHold(this.controller.signal, this.answerHold);
      if (this.isAborted) this.controller.abort();
    }
    return this.controller.signal;
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.isAborted) return;
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const l = this.listeners;
    const i = l ? l.indexOf(listener) : -1;
    if (i >= 0) l!.splice(i, 1);
  }

  abort(): void {
    if (this.isAborted) return;
    this.isAborted = true;
    this.controller?.abort();
    const l = this.listeners;
    this.listeners = undefined;
    if (l) for (const fn of l) fn();
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
  // requests a second); deadlines are kept to within the sweep period. A list, not a Set: see
  // inflight-list.ts for what a Set's churn did to the young generation.
  const inflight = new InflightList<RequestLife>();
  const sweepMs = Math.max(10, Math.min(250, Math.floor(timeoutMs / 4)));
  // Deadlines run on the monotonic clock: a wall clock stepped forward would time out every request
  // in flight at once, one stepped back would let requests run past their timeout by the step.
  const sweep = setInterval(() => {
    const now = performance.now();
    inflight.forEach((life) => {
      if (life.deadline <= now) {
        inflight.delete(life);
        expire(life);
      }
    });
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
  app.decorateRequest('callSignal', {
    getter(this: { requestLife: RequestLife }) {
      return this.requestLife;
    },
  });
  app.decorateRequest('commit', function commit(this: { requestLife: RequestLife }) {
    this.requestLife?.commit();
  });
  app.addHook('onRequest', (req, reply, done) => {
    const life = new RequestLife(reply, performance.now() + timeoutMs, inflight);
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
