import type { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { collectAsStreamed } from './stream-collect.js';

/** `server.download_stall_ms` when a caller gives none (the config's default). */
export const DEFAULT_DOWNLOAD_STALL_MS = 60_000;

/**
 * Sends a long body (a video, a stored file, an upload) and cuts the connection of a client that
 * stops taking it. A download has no request deadline once its bytes flow (`req.commit()`), and a
 * client that stops reading, or keeps its TCP window at zero, answers every keep-alive probe: TCP
 * alone would keep that connection, with the source behind it (a file descriptor, an upstream
 * connection) and their buffers, for as long as the client likes.
 *
 * Cut when the response has been waiting for the client to drain it (its buffer full) with no byte
 * taken for `stallMs`. A slow source is not the client's stall and is not cut here: the response
 * is then not full (the executor ends a stalled upstream body itself). One timer per download,
 * checking four times per period; downloads are few beside the requests that answer at once.
 */
export function sendDownload(reply: FastifyReply, body: Readable, stallMs: number = DEFAULT_DOWNLOAD_STALL_MS): FastifyReply {
  const res = reply.raw;
  let lastWritten = -1;
  let lastProgress = performance.now();
  const check = (): void => {
    // Counts bytes handed to the socket, buffered ones included: it stops growing once the client
    // stops reading and every buffer between here and the client is full.
    const written = res.socket?.bytesWritten ?? 0;
    const now = performance.now();
    if (res.destroyed) clearInterval(timer);
    else if (written !== lastWritten || !res.writableNeedDrain) {
      lastWritten = written;
      lastProgress = now;
    } else if (now - lastProgress >= stallMs) {
      clearInterval(timer);
      // Destroying the response ends the body's pipeline too, which closes the source.
      res.destroy();
    }
  };
  const timer = setInterval(check, Math.max(50, Math.floor(stallMs / 4)));
  timer.unref();
  // A client already gone emits no further 'close'; the check above stops the timer then.
  res.once('close', () => clearInterval(timer));
  return reply.send(collectAsStreamed(body));
}
