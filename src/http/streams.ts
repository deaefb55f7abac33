import { pipeline, Readable, type Duplex } from 'node:stream';

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

/**
 * The first `n` bytes of `body` (fewer when it ends first), looked at without taking them away: the
 * stream handed back yields every byte from the first. It is `body` itself, the bytes read put back
 * in front, unless `body` ended (nothing can be put back then) and the few bytes are all there was.
 * Nothing beyond the chunks already arrived is held. When `body` fails or closes first, it is
 * discarded and the promise fails with its error, as reading it would have.
 */
export function peek(body: Readable, n: number): Promise<{ head: Buffer; body: Readable; ended: boolean }> {
  guard(body);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let got = 0;
    const stop = (): void => {
      body.off('readable', onReadable);
      body.off('end', onEnd);
      body.off('error', onError);
      body.off('close', onClose);
    };
    function onReadable(): void {
      let chunk: Buffer | null;
      while (got < n && (chunk = body.read() as Buffer | null) !== null) {
        chunks.push(chunk);
        got += chunk.length;
      }
      if (got < n) return;
      stop();
      const read = Buffer.concat(chunks, got);
      body.unshift(read);
      resolve({ head: read.subarray(0, n), body, ended: false });
    }
    function onEnd(): void {
      stop();
      const read = Buffer.concat(chunks, got);
      resolve({ head: read, body: guard(Readable.from(got > 0 ? [read] : [], { objectMode: false })), ended: true });
    }
    function onError(err: Error): void {
      stop();
      discard(body);
      reject(err);
    }
    function onClose(): void {
      onError(prematureClose());
    }
    if (body.readableEnded) return onEnd();
    if (body.destroyed) return onError(body.errored ?? prematureClose());
    body.on('readable', onReadable);
    body.on('end', onEnd);
    body.on('error', onError);
    body.on('close', onClose);
  });
}

function prematureClose(): Error {
  return Object.assign(new Error('the stream closed before its first bytes'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
}
