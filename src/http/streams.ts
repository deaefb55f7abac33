import { pipeline, type Duplex, type Readable } from 'node:stream';

/**
 * The few stream operations the gateway needs, written once so that none of them can take the
 * process down. Node turns an 'error' event nobody listens for into an uncaught exception, and
 * undici's response bodies emit one when they are destroyed before their end (RequestAbortedError),
 * so a plain `body.destroy()` on an unread upstream body is a crash waiting for its moment.
 */

type Emitter = NodeJS.EventEmitter & { destroyed?: boolean };

const guarded = new WeakSet<object>();
const ignore = (): void => undefined;

/**
 * Makes sure an error on `stream` is never an uncaught exception. Call it where a stream is created
 * (or received from a library). It only adds a listener: pipelines, `for await` loops and Fastify's
 * own listeners still see every error, so failures are handled by whoever consumes the stream.
 */
export function guard<T extends Emitter>(stream: T): T {
  if (!guarded.has(stream)) {
    guarded.add(stream);
    stream.on('error', ignore);
  }
  return stream;
}

/**
 * Throws a body away and frees what holds it (for an upstream body: its connection). Always safe:
 * on a stream already ended, destroyed or errored, and whether or not anyone listens for errors.
 */
export function discard(stream: (Emitter & { destroy(err?: Error): unknown }) | null | undefined): void {
  if (!stream) return;
  guard(stream);
  if (!stream.destroyed) stream.destroy();
}

/**
 * `source` piped through `through`, returning the readable end. An error or early close anywhere
 * destroys every stream of the chain (so an upstream failure ends the client's response, and a
 * client that leaves releases the upstream), and no error is left without a listener.
 */
export function pipeThrough<T extends Duplex>(source: Readable, through: T): T {
  guard(source);
  guard(through);
  pipeline(source, through, ignore);
  return through;
}
