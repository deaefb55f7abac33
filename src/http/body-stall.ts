import { errors } from '../core/errors.js';
import type { RequestLife } from './lifecycle.js';
import { closeWithoutLingering } from './linger.js';
import { sendError } from './render.js';

/** `server.body_stall_ms` when a caller gives none (the config's default). */
export const DEFAULT_BODY_STALL_MS = 30_000;

/**
 * Whether a request's body has stopped arriving: it is being read (its stream flowing), it is not
 * complete, nothing has been answered yet, and no byte has come from the client's socket for
 * `stallMs`. Checked by the request lifecycle's sweep (lifecycle.ts), so it costs no timer and no
 * allocation per request.
 *
 * Without it a client that sends part of a body and then stops (or sends a byte now and then) keeps
 * its connection, and everything its request holds, until the request's deadline. A body the
 * gateway itself holds back is not the client's stall: one not read yet (its key still being looked
 * up) or paused by its reader (a full buffer downstream) starts the clock again.
 */
export function bodyStalled(life: RequestLife, now: number, stallMs: number): boolean {
  const req = life.reply.request.raw;
  if (req.complete || life.reply.raw.headersSent) return false;
  // Bytes read from the connection: they grow with every byte the client sends while the body is read.
  const read = req.socket?.bytesRead ?? 0;
  if (req.readableFlowing !== true || read !== life.bodyBytesSeen) {
    life.bodyBytesSeen = read;
    life.bodyProgressAt = now;
    return false;
  }
  return now - life.bodyProgressAt >= stallMs;
}

/**
 * Answers a request whose body stalled with 408 and closes its connection once the answer is out.
 * The rest of the body is not waited for: the lingering close (linger.ts) would otherwise keep
 * reading a client that sends nothing. Work begun for the request is aborted, as at its deadline.
 */
export function cutStalledBody(life: RequestLife, stallMs: number): void {
  const { reply } = life;
  life.abort();
  closeWithoutLingering(reply.raw);
  void sendError(reply, errors.requestTimeout(`No byte of the request body arrived for ${stallMs / 1000} s; send the body without pausing.`));
}
