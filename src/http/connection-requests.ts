import type { Socket } from 'node:net';

/**
 * How many requests one connection may have parsed and not yet answered. HTTP/1.1 pipelining answers
 * in order, so a client that writes many requests at once and reads nothing makes the server hold
 * every one of them (its request, reply and in-flight entry) until the ones before it are answered.
 * Node's server has no limit of its own: one write of 20,000 `GET /health` held them all. Past this
 * many the connection is closed (its requests end as a client's hang-up would end them). Browsers
 * and HTTP clients do not pipeline, or only a few requests deep.
 */
export const MAX_PIPELINED_REQUESTS = 64;

/** What a connection's close ends: a request not answered yet (lifecycle.ts's RequestLife). */
export interface ConnectionRequest {
  /** Ends the request; `finished` says whether its answer was written out in full. */
  end(finished: boolean): void;
  /** Whether its answer was written out in full. */
  readonly answerFinished: boolean;
}

const REQUESTS = Symbol('connectionRequests');
type Tracked = Socket & { [REQUESTS]?: ConnectionRequest[] };

/**
 * Notes `request` as parsed on `socket` and not answered yet, and returns the connection's list (for
 * `leaveConnection`). A pipelined request queued behind others never gets a response 'close' when
 * its socket dies (Node emits it only for the response that holds the socket), so the connection's
 * close ends every request still listed, at once, instead of leaving them to their deadline. A
 * connection past MAX_PIPELINED_REQUESTS is destroyed.
 */
export function joinConnection(socket: Socket, request: ConnectionRequest): ConnectionRequest[] {
  const tracked = socket as Tracked;
  let list = tracked[REQUESTS];
  if (!list) {
    list = tracked[REQUESTS] = [];
    socket.once('close', endRequestsOf);
  }
  list.push(request);
  // Already closed: no 'close' is coming to end it.
  if (socket.closed) endRequestsOf.call(tracked);
  else if (list.length > MAX_PIPELINED_REQUESTS) socket.destroy();
  return list;
}

/** Takes `request` off its connection's list (its answer is over). Usually the first of one or two. */
export function leaveConnection(list: ConnectionRequest[], request: ConnectionRequest): void {
  // The first, in order, on the hot path: `shift` makes no array, unlike `splice`.
  if (list[0] === request) {
    list.shift();
    return;
  }
  const i = list.indexOf(request);
  if (i > 0) list.splice(i, 1);
}

/** One listener function for every socket (no closure per connection); `this` is the socket. */
function endRequestsOf(this: Tracked): void {
  const list = this[REQUESTS];
  if (!list || list.length === 0) return;
  // end() takes each off the list: walk a copy.
  for (const request of list.slice()) request.end(request.answerFinished);
  list.length = 0;
}
