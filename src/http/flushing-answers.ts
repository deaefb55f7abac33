import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Keeps a connection whose answer is still being written out of Node's "idle" closing.
 *
 * Node 20 counts a connection idle once its request has been read and its answer's `end()` has been
 * called (`res.finished`), though the answer's last bytes may still wait in the socket's buffer for a
 * slow reader (`res.writableFinished` false): tens of MB for a large chat or embeddings answer.
 * `server.closeIdleConnections()` then destroys the socket, and `server.close()` calls it first thing,
 * as does Fastify's close: a drain that begins while such an answer is written cut it short under its
 * 200, already billed, though the grace had seconds left. So, while it runs, such answers read as not
 * ended; the listener's idle sweep (close-listener.ts) closes their connections once the bytes are out,
 * and the drain's deadline (closeAllConnections) still bounds the wait.
 *
 * And closes the connections with no request dispatched, which Node leaves open: Node 20 counts one
 * that has sent part of a request head (or the start of its next one) as active, so the idle closing
 * skips it, and `server.close()` stops the headersTimeout check that would have cut it. One such
 * connection held every drain until its deadline, and the exit skipped the charges' flush. Its
 * request has started no work, and the client's retry goes to another instance. The listener's
 * close calls this again and again (close-listener.ts), so connections opened meanwhile go too.
 *
 * Sockets are tracked per connection (not per request), so a keep-alive request pays nothing.
 */
export function keepFlushingAnswers(server: Server): void {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const closeIdle = server.closeIdleConnections.bind(server);
  server.closeIdleConnections = () => {
    const flushing: ServerResponse[] = [];
    for (const socket of sockets) {
      const res = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
      if (!res) socket.destroy();
      else if (res.finished && !res.writableFinished) flushing.push(res);
    }
    // Node skips a connection whose answer is not `finished`: these are, for this call only.
    for (const res of flushing) res.finished = false;
    try {
      closeIdle();
    } finally {
      for (const res of flushing) res.finished = true;
    }
  };
}
