import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { errors, type GatewayError } from '../core/errors.js';
import { attachHold, RequestHold } from './answer-budget.js';
import type { CallSignal } from './call-signal.js';
import { bodyStalled, cutStalledBody, DEFAULT_BODY_STALL_MS } from './body-stall.js';
import { joinConnection, leaveConnection, type ConnectionRequest } from './connection-requests.js';
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
export class RequestLife implements CallSignal, InflightNode<RequestLife>, ConnectionRequest {
  private controller?: AbortController;
  private hold?: RequestHold;
  /** Listeners added through the CallSignal face; most requests have at most one at a time. */
  private listeners?: (() => void)[];
  private isAborted = false;
  private over = false;
  /** A CallSignal's reason: the request's abort carries none (the call fails as an AbortError). */
  readonly reason = undefined;
  /**
   * Why the gateway itself cut this request short while its client was still there (a shutdown
   * reaching its deadline), if it did: a stream ends with this error as its last event.
   */
  cutError: GatewayError | undefined = undefined;
  // The list this request is in (inflight-list.ts): the deadline sweep's, or the committed ones'.
  prevInflight: RequestLife | undefined = undefined;
  nextInflight: RequestLife | undefined = undefined;
  inList: object | undefined = undefined;
  /** The body-stall watch's last look (body-stall.ts): the socket's bytes read then, and when they last grew. */
  bodyBytesSeen = -1;
  bodyProgressAt: number;
  /** The requests of its connection not answered yet (connection-requests.ts), while this one is among them. */
  connectionRequests: ConnectionRequest[] | undefined = undefined;

  constructor(
    readonly reply: FastifyReply,
    readonly deadline: number,
    /** The requests in flight; this one moves from `pending` to `committed` on commit, and leaves once over. */
    private readonly lists: InflightLists,
    startedAt: number,
  ) {
    this.bodyProgressAt = startedAt;
    lists.pending.add(this);
  }

  /** Past its point of no return: no deadline any more, but a shutdown's cut still reaches it. */
  commit(): void {
    if (this.over || this.inList === this.lists.committed) return;
    this.lists.pending.delete(this);
    this.lists.committed.add(this);
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

  /** The request's hold on the answer budget, if it took one (none is made by asking). */
  get heldAnswer(): RequestHold | undefined {
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

  get answerFinished(): boolean {
    return this.reply.raw.writableFinished;
  }

  /**
   * The response is over (sent, or the connection went away): give back what the request held.
   * Once only: the response's close and its connection's close may both report it.
   */
  end(finished: boolean): void {
    if (this.over) return;
    this.over = true;
    if (this.connectionRequests) leaveConnection(this.connectionRequests, this);
    this.connectionRequests = undefined;
    this.lists.pending.delete(this);
    this.lists.committed.delete(this);
    this.hold?.release();
    // The client left before the answer was complete: stop what is being done for it.
    if (!finished) {
      this.abort();
      this.lists.onAbandoned?.(this.reply);
    }
  }
}

/** The requests in flight: those the deadline sweep watches, and those committed to finishing. */
interface InflightLists {
  pending: InflightList<RequestLife>;
  /** Streams, downloads and creates past their point of no return: only a shutdown's cut stops them. */
  committed: InflightList<RequestLife>;
  /** Hears of each request whose connection closed before its answer was complete (the access line). */
  onAbandoned?: (reply: FastifyReply) => void;
}

const LIFE = Symbol('requestLife');
type WithLife = ServerResponse & { [LIFE]?: RequestLife };

/** The answer-budget hold of the request a response answers, if it holds one (write-stall.ts). */
export function answerHoldOf(res: ServerResponse): RequestHold | undefined {
  return (res as WithLife)[LIFE]?.heldAnswer;
}

/** One listener function for every response (no closure per request); `this` is the response. */
function onResponseClose(this: WithLife): void {
  this[LIFE]?.end(this.writableFinished);
}

/**
 * Gives every request an abort signal and a deadline. Requests that outlive `timeoutMs` get a 408
 * in the spec's shape (not a dropped socket) and their upstream work is aborted, unless they
 * committed to finishing (`req.commit()`, e.g. once a video job holding money exists). A client
 * that leaves before its answer is complete aborts the signal too, and `onAbandoned` hears of it.
 * A request whose body stops arriving for `bodyStallMs` is cut before its deadline (body-stall.ts).
 */
export function installRequestLifecycle(
  app: FastifyInstance,
  timeoutMs: number,
  onAbandoned?: (reply: FastifyReply) => void,
  bodyStallMs: number = DEFAULT_BODY_STALL_MS,
): void {
  // One sweep for every in-flight request instead of a timer each (cheaper at thousands of
  // requests a second); deadlines are kept to within the sweep period. A list, not a Set: see
  // inflight-list.ts for what a Set's churn did to the young generation.
  const lists: InflightLists = { pending: new InflightList<RequestLife>(), committed: new InflightList<RequestLife>(), onAbandoned };
  const inflight = lists.pending;
  const sweepMs = Math.max(10, Math.min(250, Math.floor(Math.min(timeoutMs, bodyStallMs) / 4)));
  // Deadlines run on the monotonic clock: a wall clock stepped forward would time out every request
  // in flight at once, one stepped back would let requests run past their timeout by the step.
  const sweep = setInterval(() => {
    const now = performance.now();
    inflight.forEach((life) => {
      if (life.deadline <= now) {
        inflight.delete(life);
        expire(life);
      } else if (bodyStalled(life, now, bodyStallMs)) {
        inflight.delete(life);
        cutStalledBody(life, bodyStallMs);
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

  /**
   * Stops every request still in flight, as a client that hung up would (the shutdown does this
   * shortly before its deadline, so that what the requests did is billed and flushed before the
   * exit). One not answered yet gets `error` (a 503 shutting_down) at once, and its work is
   * aborted: nothing is charged, as for a request past its deadline. A committed one is aborted
   * too: a chat stream ends with `error` as its last event and is billed for what it carried; a
   * create past its point of no return does not listen and finishes if it can. One whose client
   * has stopped reading (its answer waiting on a full socket) is closed, since no last event could
   * reach that client and its writes would otherwise wait out their stall timeout. Returns how
   * many requests were cut.
   */
  function cutAll(error: GatewayError): number {
    let n = 0;
    lists.pending.forEach((life) => {
      lists.pending.delete(life);
      n++;
      life.cutError = error;
      const { reply } = life;
      if (reply.sent || reply.raw.headersSent) return life.abort();
      life.abort();
      // As for a request arriving during the drain: the retry goes to another instance.
      reply.raw.setHeader('connection', 'close');
      void sendError(reply, error);
    });
    lists.committed.forEach((life) => {
      lists.committed.delete(life);
      n++;
      life.cutError = error;
      life.abort();
      if (life.reply.raw.writableNeedDrain) life.reply.raw.destroy();
    });
    return n;
  }
  app.decorate('cutRequestsInFlight', cutAll);

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
    const now = performance.now();
    const life = new RequestLife(reply, now + timeoutMs, lists, now);
    req.requestLife = life;
    const raw = reply.raw as WithLife;
    raw[LIFE] = life;
    raw.on('close', onResponseClose);
    // A pipelined request queued behind others hears of its connection's close only through this.
    if (req.raw.socket) life.connectionRequests = joinConnection(req.raw.socket, life);
    done();
  });
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Cuts every request in flight short with `error` (see installRequestLifecycle); returns how many. */
    cutRequestsInFlight(error: GatewayError): number;
  }
  interface FastifyRequest {
    /** Internal to lifecycle.ts: the request's deadline, signal and hold. */
    requestLife: RequestLife;
  }
}
