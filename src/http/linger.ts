import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';

/** How long, and how many bytes, the gateway keeps reading a body it has already answered. */
export interface LingerLimits {
  ms: number;
  bytes: number;
}

export const DEFAULT_LINGER: LingerLimits = { ms: 10_000, bytes: 64 * 1024 * 1024 };
// Often enough that a fast client (loopback moves over 100 MB in 100 ms) cannot run far past the byte
// bound between two checks; the timer exists only while a refused body is being discarded.
const CHECK_MS = 10;

/**
 * Lingering close (as nginx does it). When the gateway answers before reading the whole request
 * body (413 for a body over the limit, 503 when shedding load, 401 for a big upload without a key),
 * closing the socket at once makes the kernel reset the connection while the client is still
 * sending, and most clients then report a broken pipe instead of the answer. So the answer goes
 * out on a connection kept open, the rest of the body is read and discarded (never stored), and the
 * socket is destroyed only if the client goes on for longer than `limits.ms` or `limits.bytes`.
 */
export function installLingeringClose(app: FastifyInstance, limits: LingerLimits = DEFAULT_LINGER): void {
  app.addHook('onSend', (req, reply, payload, done) => {
    const raw = req.raw;
    if (!raw.complete && !(reply.raw as Unlingering)[NO_LINGER]) {
      // Fastify asks to close after a body it refused; Node would then reset the unread upload.
      if (String(reply.getHeader('connection')).toLowerCase() === 'close') reply.removeHeader('connection');
      reply.raw.once('finish', () => discardRest(raw, limits));
    }
    done(null, payload);
  });
}

const NO_LINGER = Symbol('closeWithoutLingering');
type Unlingering = ServerResponse & { [NO_LINGER]?: true };

/**
 * Closes the connection once `res` is sent, without reading what is left of the body: for a body
 * that stopped arriving (body-stall.ts) there is nothing left to wait for, and a client that sends
 * nothing would hold the lingering read for its whole time.
 */
export function closeWithoutLingering(res: ServerResponse): void {
  (res as Unlingering)[NO_LINGER] = true;
  res.setHeader('connection', 'close');
}

function discardRest(req: IncomingMessage, limits: LingerLimits): void {
  const socket = req.socket;
  if (req.complete || socket.destroyed) return;
  const startBytes = socket.bytesRead;
  const startedAt = Date.now();
  const stop = () => {
    clearInterval(timer);
    req.off('end', stop);
    socket.off('close', stop);
  };
  const timer = setInterval(() => {
    if (req.complete) return stop();
    if (Date.now() - startedAt >= limits.ms || socket.bytesRead - startBytes >= limits.bytes) {
      stop();
      socket.destroy();
    }
  }, CHECK_MS);
  timer.unref();
  req.once('end', stop);
  socket.once('close', stop);
  // Node discards an unread body by itself, but not one a body parser started and then left paused.
  req.on('error', () => {});
  req.resume();
}
