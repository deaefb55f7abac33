import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { answerHoldOf } from './lifecycle.js';

/** A connection as the watch sees it: its answer's last write progress, kept on the socket itself. */
interface WatchedSocket extends Socket {
  _httpMessage?: ServerResponse | null;
  /** libuv's count of bytes queued on the connection and not yet taken by the kernel (internal, read only). */
  _handle?: { writeQueueSize?: number } | null;
  stallMark?: number;
  stallQueued?: number;
  stallWritten?: number;
  stallSince?: number;
}

/**
 * Closes the connection of a client that has stopped taking its answer. Downloads and chat streams
 * watch their own writes (download.ts, chat/sse.ts); an answer written whole (an embeddings or chat
 * completion of tens of MB) is handed to the socket in one `end()`, and until the client has taken
 * the last byte its request is not over: its hold on the answer budget (answer-budget.ts) and its
 * buffers stay. Four clients that sent 2,048-input embeddings requests and never read held the
 * whole 256 MiB budget, shedding everyone else, for as long as they stayed connected.
 *
 * A connection is stalled when its answer waits on the client (ended but not flushed, or not ended
 * and its buffer full) and no byte has left the process for `stallMs`: nothing taken from libuv's
 * write queue and no write completed. That alone does not tell a client that stopped reading from
 * one reading slowly: the kernel takes more of an answer only once about a third of its send buffer
 * (4 MiB on loopback) is free, so under a steady reader of 15 KB/s neither figure moves for minutes
 * (an 8.8 MB embeddings answer was cut at ~65 s, truncated and charged). So a stalled connection is
 * cut only while the answer budget its request holds bytes of is short of room (more than half in
 * use, or an answer shed for lack of it within the stall period: answer-budget.ts), which is when
 * its hold keeps others out. An answer holding no budget, or one with room to spare, is left to
 * its client, bounded by its connection. Destroying the socket closes the response, which gives
 * back what the request held (lifecycle.ts).
 *
 * One timer for the server, checking every connection four times per period; the state lives on the
 * socket, so requests on a kept-alive connection cost nothing.
 */
export function cutStalledAnswers(server: Server, stallMs: number): void {
  const sockets = new Set<WatchedSocket>();
  server.on('connection', (socket: WatchedSocket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const timer = setInterval(() => {
    const now = performance.now();
    for (const socket of sockets) if (stalledFor(socket, now) >= stallMs && holdsShortBudget(socket, now, stallMs)) socket.destroy();
  }, Math.max(50, Math.floor(stallMs / 4)));
  timer.unref();
  server.once('close', () => clearInterval(timer));
}

/** How long the socket's answer has waited on its client without any byte going out; 0 when it is not waiting. */
function stalledFor(socket: WatchedSocket, now: number): number {
  const res = socket._httpMessage;
  const waiting = res != null && !res.writableFinished && (res.writableEnded || res.writableNeedDrain);
  if (!waiting || socket.destroyed) {
    socket.stallSince = undefined;
    return 0;
  }
  // `writableLength` holds a chunk until libuv has written all of it, so a large answer's progress
  // shows only in the write queue; `bytesWritten` grows when the response writes more.
  const queued = socket._handle?.writeQueueSize ?? -1;
  const buffered = socket.writableLength;
  const written = socket.bytesWritten;
  if (socket.stallSince === undefined || queued !== socket.stallQueued || buffered !== socket.stallMark || written !== socket.stallWritten) {
    socket.stallQueued = queued;
    socket.stallMark = buffered;
    socket.stallWritten = written;
    socket.stallSince = now;
    return 0;
  }
  return now - socket.stallSince;
}

/** Whether the socket's request holds bytes of an answer budget that is short of room. */
function holdsShortBudget(socket: WatchedSocket, now: number, stallMs: number): boolean {
  const res = socket._httpMessage;
  return res != null && answerHoldOf(res)?.short(now, stallMs) === true;
}
