import type { ServerResponse } from 'node:http';
import { type Readable, Transform, type TransformCallback } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { errors } from '../core/errors.js';
import { AnonymousShares, anonymousClient } from './body-shares.js';
import { UpfrontTakes } from './upfront-takes.js';

/**
 * A process-wide budget of bytes held in memory. The gateway keeps two: request bodies held by
 * requests in flight (every body is kept while its request runs, raw bytes then the parsed JSON,
 * so under hostile load memory grows with the bodies in flight; a body whose next bytes no longer
 * fit is shed with 503 `overloaded` and `Retry-After`), and upstream answers buffered whole (see
 * answer-budget.ts).
 */
export class BodyBudget {
  private used = 0;
  /** Callers of `take` waiting for room, served in order as bytes come back. */
  private readonly waiters: { bytes: number; grant(): void }[] = [];

  constructor(readonly limit: number) {}

  get inUse(): number {
    return this.used;
  }

  tryTake(bytes: number): boolean {
    if (this.used + bytes > this.limit) return false;
    this.used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
    while (this.waiters.length > 0 && this.used + this.waiters[0]!.bytes <= this.limit) {
      const w = this.waiters.shift()!;
      this.used += w.bytes;
      w.grant();
    }
  }

  /**
   * Takes `bytes` until the returned function is called (given back on the first call only), or
   * undefined with nothing taken when they do not fit. For memory a request holds besides its body
   * for as long as its caller knows, not until its response closes.
   */
  hold(bytes: number): (() => void) | undefined {
    if (!this.tryTake(bytes)) return undefined;
    let held = bytes;
    return () => {
      this.give(held);
      held = 0;
    };
  }

  /**
   * Takes `bytes`, waiting for room up to `waitMs` (for producers that can hold back instead of
   * failing, such as the embedded simulators); false when no room came in time. More than the whole
   * budget is refused at once.
   */
  take(bytes: number, waitMs: number): Promise<boolean> {
    if (bytes > this.limit) return Promise.resolve(false);
    if (this.waiters.length === 0 && this.tryTake(bytes)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const w = {
        bytes,
        grant: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
      const timer = setTimeout(() => {
        const i = this.waiters.indexOf(w);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(false);
      }, waitMs);
      this.waiters.push(w);
    });
  }
}

/** The meter of the body a response's request is reading; given back when the response closes. */
const METER = Symbol('bodyMeter');
type MeteredResponse = ServerResponse & { [METER]?: BudgetMeter };

/** One listener function for every response (no closure per request); `this` is the response. */
function releaseMeter(this: MeteredResponse): void {
  this[METER]?.release();
}

/**
 * Wires the budget into the request lifecycle. A body takes its bytes as they arrive, whatever its
 * `Content-Length` says, and is cut with 503 `overloaded` once the next chunk no longer fits; the
 * bytes go back when the response is over (sent or abandoned). Taking the declared length on
 * arrival let thirteen connections that declared 10 MiB each and then sent a byte every few seconds
 * hold the whole default budget, before any credential was looked at, for as long as the request
 * deadline. A body whose caller is not known takes from the anonymous shares too (body-shares.ts).
 * A declared size over the route's body limit takes nothing: it is answered 413 without being read.
 */
export function installBodyBudget(app: FastifyInstance, budget: BodyBudget, bodyLimit: number): void {
  const shares = new AnonymousShares(budget.limit);
  const upfront = new UpfrontTakes(budget.limit);
  // One listener function for every response (no closure per request); `this` is the response.
  function giveBackTaken(this: TakenResponse): void {
    const taken = this[TAKEN] ?? 0;
    budget.give(taken);
    upfront.give(this[TAKEN_BY] ?? '', taken);
  }
  // A multipart upload is read by its route, which takes the bytes it holds as they arrive.
  app.decorateReply('takeUploadBytes', function takeUploadBytes(this: FastifyReply, bytes: number): boolean {
    return takeUpload(budget, this.raw, bytes);
  });
  app.decorateReply('takeHeldBytes', function takeHeldBytes(this: FastifyReply, bytes: number): boolean {
    return takeHeld(budget, this.raw, bytes);
  });
  app.decorateReply('holdBytes', function holdBytes(this: FastifyReply, bytes: number): (() => void) | undefined {
    return budget.hold(bytes);
  });

  app.addHook('preParsing', (req, reply, payload, done) => {
    const chunked = req.headers['transfer-encoding'] !== undefined;
    const declared = Number(req.headers['content-length']);
    // No Content-Length and no Transfer-Encoding: no body.
    if (!chunked && !(declared > 0)) return done(null, payload);
    // A small body of a keyed caller (an embeddings or chat request of a few KB, the hot path) takes
    // its declared length whole, with no meter: a Transform and its pipe per request were ~5 KB of
    // allocation. Its caller is known (the gate ran in onRequest), the sweep cuts a body that stops
    // arriving (body-stall.ts), and a key could as well send such a body for real.
    // Such takes are capped (upfront-takes.ts); past the caps the body is metered like any other,
    // so a key that opens thousands of connections and trickles its bodies holds what it sends.
    const account = req.auth?.account.id;
    if (!chunked && declared <= KEYED_UPFRONT_MAX_BYTES && account !== undefined && upfront.tryTake(account, declared)) {
      if (!budget.tryTake(declared)) {
        upfront.give(account, declared);
        return done(errors.overloaded(), undefined);
      }
      const raw = reply.raw as TakenResponse;
      raw[TAKEN] = declared;
      raw[TAKEN_BY] = account;
      raw.once('close', giveBackTaken);
      return done(null, payload);
    }
    // Refused by the body parser with 413 before it reads a byte.
    if (!chunked && declared > (req.routeOptions.bodyLimit ?? bodyLimit)) return done(null, payload);
    // A multipart upload is read by its route from the raw request (routes/multipart-form.ts), never from
    // this stream: a meter nobody reads would stop the upload once its buffers filled (~32 KB), and
    // its error on a client's abort would reach no listener. The upload's own limits bound it.
    if (isMultipart(req.headers['content-type'])) return done(null, payload);
    const client = anonymousClient(req);
    const meter = new BudgetMeter(budget, client === undefined ? undefined : shares, client ?? '', payload);
    const raw = reply.raw as MeteredResponse;
    raw[METER] = meter;
    raw.once('close', releaseMeter);
    // The parser reads the meter; errors of the client's stream reach it through the pipe's end.
    payload.on('error', (e) => meter.destroy(e));
    // The body parser listens for the meter's errors and answers them; this listener only keeps an
    // error with no reader (the request already answered) from being an uncaught 'error' event.
    meter.on('error', ignore);
    done(null, payload.pipe(meter));
  });
}

const ignore = (): void => undefined;

/** The largest declared body of a keyed caller taken whole on arrival instead of metered. */
const KEYED_UPFRONT_MAX_BYTES = 64 * 1024;

/** The declared bytes a keyed request's small body took, given back when its response closes. */
const TAKEN = Symbol('bodyBytesTaken');
/** The account whose up-front takes TAKEN counts against. */
const TAKEN_BY = Symbol('bodyBytesTakenBy');
type TakenResponse = ServerResponse & { [TAKEN]?: number; [TAKEN_BY]?: string };

/** The upload bytes a response gives back to the budget when it closes. */
const UPLOAD_TAKEN = Symbol('uploadBytesTaken');

/**
 * Takes `bytes` of a multipart upload that its route is holding: false when the budget has no room
 * (the route answers 503 `overloaded`). What is taken goes back when the response closes.
 */
function takeUpload(budget: BodyBudget, raw: HeldResponse, bytes: number): boolean {
  // Nobody is left to answer: the bytes are about to be dropped, and no 'close' would give them back.
  if (raw.destroyed || raw.writableFinished) return true;
  return holdUntilClose(budget, raw, bytes);
}

type HeldResponse = ServerResponse & { [UPLOAD_TAKEN]?: number };

/**
 * Takes `bytes` a route is about to read into memory besides its request body (a stored file a
 * create refers to): false when the budget has no room. Unlike an upload's bytes, these are not
 * read yet, so a request whose client is gone gets none (it has no use for them).
 */
function takeHeld(budget: BodyBudget, raw: HeldResponse, bytes: number): boolean {
  if (raw.destroyed || raw.writableFinished) return false;
  return holdUntilClose(budget, raw, bytes);
}

/** Takes `bytes` from the budget until the response closes. */
function holdUntilClose(budget: BodyBudget, raw: HeldResponse, bytes: number): boolean {
  if (!budget.tryTake(bytes)) return false;
  if (raw[UPLOAD_TAKEN] === undefined) {
    raw[UPLOAD_TAKEN] = 0;
    raw.once('close', () => budget.give(raw[UPLOAD_TAKEN] ?? 0));
  }
  raw[UPLOAD_TAKEN] += bytes;
  return true;
}

declare module 'fastify' {
  interface FastifyReply {
    /**
     * Takes `bytes` of a multipart upload from the process-wide budget of request bytes in flight
     * (given back when the response closes); false when there is no room for them.
     */
    takeUploadBytes(bytes: number): boolean;
    /**
     * Takes `bytes` the route is about to read into memory besides its request body (a stored file)
     * from the same budget, given back when the response closes; false when there is no room for them.
     */
    takeHeldBytes(bytes: number): boolean;
    /**
     * Takes `bytes` the route holds besides its request body from the same budget until it calls the
     * function returned (once); undefined, nothing taken, when there is no room for them.
     */
    holdBytes(bytes: number): (() => void) | undefined;
  }
}

function isMultipart(contentType: string | undefined): boolean {
  return contentType !== undefined && /^\s*multipart\//i.test(contentType);
}

/**
 * Passes a body through, taking each chunk's bytes from the budget, and from the anonymous shares
 * when its caller is not known (503 `overloaded` when they do not fit).
 */
class BudgetMeter extends Transform {
  private taken = 0;
  private released = false;
  /** Read by Fastify's body-limit check, which otherwise sees only what it receives from us. */
  receivedEncodedLength = 0;

  constructor(
    private readonly budget: BodyBudget,
    private readonly shares: AnonymousShares | undefined,
    private readonly client: string,
    private readonly source: Readable,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    // Bytes still arriving after the response are being discarded, not held.
    if (!this.released) {
      if (this.shares && !this.shares.tryTake(this.client, chunk.length)) return cb(errors.overloaded());
      if (!this.budget.tryTake(chunk.length)) {
        this.shares?.give(this.client, chunk.length);
        return cb(errors.overloaded());
      }
      this.taken += chunk.length;
    }
    this.receivedEncodedLength += chunk.length;
    cb(null, chunk);
  }

  /** The response is over: the bytes go back, and the rest of the body, if any, is read and dropped. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.budget.give(this.taken);
    this.shares?.give(this.client, this.taken);
    this.taken = 0;
    // Nobody reads this meter any more: left piped, its full buffers would pause the client's stream,
    // and the lingering close (linger.ts) could not read the refused body's rest to its end.
    this.source.unpipe(this);
    this.source.resume();
  }
}
