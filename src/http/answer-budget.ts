import type { Readable } from 'node:stream';
import { errors } from '../core/errors.js';
import type { BodyBudget } from './body-budget.js';
import type { CallSignal } from './call-signal.js';
import { discard } from './streams.js';
import { TransportError } from './types.js';

/**
 * Memory for upstream answers the gateway reads whole (embeddings vectors, chat completions, vendor
 * JSON, fetched media). Request bodies are bounded by the body budget, but what a request *causes*
 * can be far larger: 2,048 embeddings inputs come back as about 60 MB of JSON. Every such answer
 * takes its bytes from one process-wide budget while it is read and gives them back when the
 * client's request is over (its answer sent or abandoned), since the bytes, their parsed form and
 * the rendered answer all live until then. Work done for no client request (polling) gives them back
 * as soon as the answer is read. Beyond the budget the request is shed with 503 `overloaded`.
 *
 * Answers of up to SMALL_ANSWER_BYTES are not metered: a video create's few hundred bytes must never
 * be refused after the vendor accepted the job, and their total is bounded by the connection pools.
 * A call that is one of many made for one request (an embeddings fan-out: 2,048 calls of 60 KB
 * each) is metered from its first byte (`meterAll`), since there the pools bound nothing.
 */
export const SMALL_ANSWER_BYTES = 64 * 1024;

/**
 * An answer declared at least this long is copied into one buffer of its declared size as its
 * chunks arrive, a chunk's copy per turn: joining the chunks once all were read was one copy of the
 * whole answer in one go (~40-60 ms of the event loop for a 60 MB poll answer carrying a video).
 */
const COPY_AS_READ_BYTES = 1024 * 1024;

/** Bytes joined per turn of the event loop when a long answer of unknown length (chunked) is assembled once read. */
const JOIN_STEP_BYTES = 4 * 1024 * 1024;

/** When each budget last shed an answer for lack of room (performance.now()). */
const lastShed = new WeakMap<BodyBudget, number>();

/**
 * Whether `budget` is short of room: more than half of it in use, or an answer shed for lack of it
 * within the last `withinMs`. Only then is a client that takes its answer slowly worth cutting
 * (write-stall.ts): otherwise what it holds keeps no one else out.
 */
export function budgetShort(budget: BodyBudget, now: number, withinMs: number): boolean {
  if (budget.inUse * 2 > budget.limit) return true;
  const shed = lastShed.get(budget);
  return shed !== undefined && now - shed <= withinMs;
}

/** The bytes one client request holds in the answer budget, given back once when it ends. */
export class RequestHold {
  private readonly held = new Map<BodyBudget, number>();
  private over = false;

  /** Records bytes already taken from `budget`; false once the request is over (the caller gives them back). */
  keep(budget: BodyBudget, bytes: number): boolean {
    if (this.over) return false;
    this.held.set(budget, (this.held.get(budget) ?? 0) + bytes);
    return true;
  }

  get bytes(): number {
    let n = 0;
    for (const v of this.held.values()) n += v;
    return n;
  }

  /** Whether a budget this request holds bytes of is short of room (`budgetShort`). */
  short(now: number, withinMs: number): boolean {
    for (const budget of this.held.keys()) if (budgetShort(budget, now, withinMs)) return true;
    return false;
  }

  release(): void {
    if (this.over) return;
    this.over = true;
    for (const [budget, bytes] of this.held) budget.give(bytes);
    this.held.clear();
  }
}

/**
 * A request's hold travels with its abort signal, which every upstream call already receives: the
 * request's own CallSignal carries it (`answerHold`), an AbortSignal is linked to it here, and a
 * signal derived from either (AbortSignal.any for a fan-out) is linked with `inheritHold`.
 */
const holds = new WeakMap<object, RequestHold>();

export function attachHold(signal: AbortSignal, hold: RequestHold): void {
  holds.set(signal, hold);
}

export function inheritHold(child: AbortSignal, parent: CallSignal | undefined): void {
  const hold = holdOf(parent);
  if (hold) holds.set(child, hold);
}

export function holdOf(signal: CallSignal | undefined): RequestHold | undefined {
  return signal ? (signal.answerHold ?? holds.get(signal)) : undefined;
}

export interface AnswerLimits {
  /** Process-wide budget for answers being read or held; undefined = unmetered (tests, tools). */
  budget?: BodyBudget;
  /** Largest single answer read whole. */
  maxBytes: number;
  /** Meter the answer from its first byte, small ones too (a call of a fan-out). */
  meterAll?: boolean;
}

/**
 * Collects a whole answer, at most `limits.maxBytes` bytes and until `deadline` (the upstream's
 * timeout after the headers): undici's body timeout only sees a stall between chunks, so an upstream
 * trickling a byte at a time is stopped here (checked per chunk, which needs no timer per request).
 * A declared Content-Length over the cap is refused before a byte is read; bytes beyond
 * SMALL_ANSWER_BYTES are taken from the budget (the declared length at once, when there is one, so
 * concurrent answers do not each get half-way), and an answer that does not fit is abandoned with
 * 503 `overloaded`. Every byte taken goes back: to the request's hold (`finish`), or on any failure
 * (`abandon`). `start` and `add` throw the error that ends the answer; the caller then abandons it.
 */
export class WholeAnswer {
  private readonly chunks: Buffer[] = [];
  /** The answer's one buffer, when its length was declared long (COPY_AS_READ_BYTES): the chunks are copied in as they come. */
  private whole: Buffer | undefined;
  private size = 0;
  private taken = 0;
  private deadline = Number.POSITIVE_INFINITY;
  private readonly unmetered: number;

  constructor(
    private readonly limits: AnswerLimits,
    private readonly signal: CallSignal | undefined,
  ) {
    this.unmetered = limits.meterAll ? 0 : SMALL_ANSWER_BYTES;
  }

  /**
   * Once the headers are in, before the first byte: the declared length, if any, is checked and
   * taken from the budget; the body must be complete by `deadline`.
   */
  start(declaredLength: string | string[] | undefined, deadline: number): void {
    this.deadline = deadline;
    const { maxBytes } = this.limits;
    const declared = typeof declaredLength === 'string' && /^\d+$/.test(declaredLength) ? Number(declaredLength) : undefined;
    if (declared !== undefined && declared > maxBytes)
      throw new TransportError('too_large', `upstream answer of ${declared} bytes is over ${maxBytes}`, true);
    if (declared !== undefined && declared > this.unmetered) this.take(declared);
    if (declared !== undefined && declared >= COPY_AS_READ_BYTES) this.whole = Buffer.allocUnsafeSlow(declared);
  }

  add(chunk: Buffer): void {
    const { maxBytes } = this.limits;
    this.size += chunk.length;
    if (this.size > maxBytes) throw new TransportError('too_large', `upstream answer over ${maxBytes} bytes`, true);
    if (Date.now() > this.deadline) throw new TransportError('timeout', 'upstream body still arriving at the deadline', true);
    // Without a declared length (chunked), bytes are taken as they arrive past the small size.
    if (this.size - this.unmetered > this.taken) this.take(this.size - this.unmetered - this.taken);
    const at = this.size - chunk.length;
    if (this.whole && this.size <= this.whole.length) {
      chunk.copy(this.whole, at);
      return;
    }
    // Longer than declared (undici refuses such an answer, but this does not rely on it): joined as any other.
    if (this.whole) this.chunks.push(this.whole.subarray(0, at));
    this.whole = undefined;
    this.chunks.push(chunk);
  }

  /** The whole answer; its bytes now belong to the request's hold (or go back when there is none). */
  finish(): Buffer {
    this.handOver();
    if (this.whole) return this.whole.subarray(0, this.size);
    return this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size);
  }

  /**
   * `finish`, with a long answer of unknown length joined JOIN_STEP_BYTES per turn of the event loop
   * rather than in one copy. For answers read from a stream; the embeddings hot path joins at once.
   */
  async finishInSteps(): Promise<Buffer> {
    if (this.whole || this.size <= JOIN_STEP_BYTES) return this.finish();
    this.handOver();
    const joined = Buffer.allocUnsafeSlow(this.size);
    let at = 0;
    let sinceTurn = 0;
    for (const chunk of this.chunks.splice(0)) {
      chunk.copy(joined, at);
      at += chunk.length;
      sinceTurn += chunk.length;
      if (sinceTurn >= JOIN_STEP_BYTES && at < this.size) {
        sinceTurn = 0;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    return joined;
  }

  /** The answer is not read to its end: every byte taken goes back. */
  abandon(): void {
    this.limits.budget?.give(this.taken);
    this.taken = 0;
    this.chunks.length = 0;
    this.whole = undefined;
  }

  /** The answer's bytes now belong to the request's hold (or go back when there is none). */
  private handOver(): void {
    const { budget } = this.limits;
    if (budget && this.taken > 0 && !holdOf(this.signal)?.keep(budget, this.taken)) budget.give(this.taken);
    this.taken = 0;
  }

  private take(bytes: number): void {
    const { budget } = this.limits;
    if (!budget || bytes <= 0) return;
    if (!budget.tryTake(bytes)) {
      lastShed.set(budget, performance.now());
      throw errors.overloaded();
    }
    this.taken += bytes;
  }
}

/** Reads a whole answer from a stream (see WholeAnswer for the bounds). */
export function readAnswer(
  body: Readable,
  declaredLength: string | string[] | undefined,
  limits: AnswerLimits,
  deadline: number,
  signal: AbortSignal | undefined,
): Promise<Buffer> {
  const answer = new WholeAnswer(limits, signal);
  // Listeners rather than `for await`: the async iterator costs a few promises per chunk and per
  // answer, on the path every embeddings and chat answer takes.
  return new Promise<Buffer>((resolve, reject) => {
    let settled = false;
    const fail = (e: unknown): void => {
      if (settled) return;
      settled = true;
      discard(body);
      answer.abandon();
      reject(e);
    };
    try {
      answer.start(declaredLength, deadline);
    } catch (e) {
      fail(e);
      return;
    }
    body.on('data', (chunk: Buffer) => {
      if (settled) return;
      try {
        answer.add(chunk);
      } catch (e) {
        fail(e);
      }
    });
    body.once('error', fail);
    // A body closed before its end without an error of its own (a destroy elsewhere) is a cut answer.
    body.once('close', () => fail(Object.assign(new Error('upstream answer closed before its end'), { code: 'ERR_STREAM_PREMATURE_CLOSE' })));
    body.once('end', () => {
      if (settled) return;
      settled = true;
      answer.finishInSteps().then(resolve, reject);
    });
  });
}
