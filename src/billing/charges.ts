import { errors, GatewayError } from '../core/errors.js';
import { isMicros, type Micros } from '../core/money.js';
import type { Attribution, Store } from '../store/types.js';

interface Pending {
  accountId: string;
  amount: Micros;
  ref: string;
  note: string | null;
  now: number;
  by?: Attribution;
  /** True when the caller waits for the write (`charge`): a failed write is its error, not retried. */
  awaited: boolean;
  resolve(v: 'ok' | 'duplicate'): void;
  reject(e: unknown): void;
}

export interface ChargeBatcherOptions {
  /** Most charges in one write. */
  maxBatch?: number;
  /**
   * Most charges acknowledged but not yet written (queued plus in flight). Past it `submit` waits
   * for its own write like `charge`, so a slow or absent database bounds what a crash can lose.
   */
  maxUnwritten?: number;
  /** A charge that could not be written (reported once per failed write; it is dropped or retried). */
  onError?: (e: unknown, ref: string) => void;
  /**
   * How long an acknowledged charge (`submit`) may wait for others before its write starts, when no
   * write is due sooner (0: the next event-loop turn). For a store whose writes are synchronous
   * (SQLite): nothing queues while such a write runs, so without a window every turn pays a whole
   * transaction, and the commit is most of a charge's cost (measured: one charge alone ~120 us of CPU,
   * 16 in one transaction ~60 us each, 64 ~25 us). Part of what a crash can lose (docs/architecture.md).
   */
  gatherMs?: number;
  /**
   * Under steady load, a write of acknowledged charges starts at most once per this many ms (0: as
   * soon as the previous one ends). For a store with a server of its own (PostgreSQL): everything
   * queued while a write is in flight goes into the next anyway, but at one round trip apart the
   * batches stay small, and the server's cost per charge falls with the batch (measured: ~23 us each
   * in a statement of 20, ~17 us in one of 60). Part of what a crash can lose, like `gatherMs`.
   * Not used on SQLite, where it was not shown to help (bench/README.md, "paced charge writes").
   */
  paceMs?: number;
}

/** The pace of PostgreSQL's charge writes under load (see `paceMs`). */
export const PG_PACE_MS = 10;

/** The gather window on SQLite (see `gatherMs`): at one request per millisecond about ten charges per commit. */
export const SQLITE_GATHER_MS = 10;

/** Default bound on charges acknowledged and not yet written (see `maxUnwritten`). */
export const MAX_UNWRITTEN_CHARGES = 2_000;

/** Retry delays for acknowledged charges after a failed write (the last one repeats). */
const RETRY_MS = [50, 200, 1_000, 2_000];

/**
 * Charges from concurrent requests are written together, one write at a time: everything queued
 * while a write is in flight goes into the next one (group commit), so under load each write
 * carries many charges and no request queues behind a database round trip of another.
 *
 * Two ways in:
 *  - `charge` settles once its charge is committed (or failed); chat and admin paths use it.
 *  - `submit` acknowledges at once and returns a `durable` promise that settles when the charge is
 *    in the store. The embeddings answer leaves without waiting for the database. A failed write
 *    is retried; a crash loses at most the charges of the write in flight and those queued behind
 *    it or gathering for the next one (`gatherMs`, `paceMs`): a few milliseconds of traffic, never more than
 *    `maxUnwritten`, always in the client's favour: nobody is charged for work not done, only possibly not charged for work done.
 *    `drain` (shutdown) writes them all before the store closes.
 * Exactly-once rests on the ledger's unique (ref, kind) either way.
 */
export class ChargeBatcher {
  private queue: Pending[] = [];
  private scheduled = false;
  private writing: Promise<void> | undefined;
  /** The charges of the write in flight (empty when none is). */
  private inFlight: Pending[] = [];
  private retryTimer: NodeJS.Timeout | undefined;
  /** Pending write of acknowledged charges at the end of the gather window or the pace. */
  private gatherTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  /** When the last write started (`performance.now()`: monotonic, so a clock set back cannot stretch the pace). */
  private lastStart = Number.NEGATIVE_INFINITY;
  /** Charges acknowledged by `submit` and not yet written. */
  private unwritten = 0;
  private readonly maxBatch: number;
  private readonly maxUnwritten: number;
  private readonly onError: (e: unknown, ref: string) => void;
  private readonly gatherMs: number;
  private readonly paceMs: number;

  constructor(
    private readonly store: Pick<Store, 'chargeMany'>,
    opts: ChargeBatcherOptions | number = {},
  ) {
    const o = typeof opts === 'number' ? { maxBatch: opts } : opts;
    this.maxBatch = o.maxBatch ?? 512;
    this.maxUnwritten = o.maxUnwritten ?? MAX_UNWRITTEN_CHARGES;
    this.onError = o.onError ?? (() => undefined);
    this.gatherMs = Math.max(0, o.gatherMs ?? 0);
    this.paceMs = Math.max(0, o.paceMs ?? 0);
  }

  /** Charges acknowledged but not yet in the store (for metrics and tests). */
  get backlog(): number {
    return this.unwritten;
  }

  charge(accountId: string, amount: Micros, ref: string, note: string | null, now: number, by?: Attribution): Promise<'ok' | 'duplicate'> {
    const refused = refuseAmount(amount);
    if (refused) return Promise.reject(refused);
    return new Promise((resolve, reject) => this.enqueue({ accountId, amount, ref, note, now, by, awaited: true, resolve, reject }));
  }

  /**
   * Queues a charge and returns without waiting for the database, unless `maxUnwritten` charges
   * are already waiting (then it waits for its own write, and a failure is thrown). `durable`
   * settles once the charge is in the store or was given up (logged through `onError`); it never
   * rejects.
   */
  async submit(accountId: string, amount: Micros, ref: string, note: string | null, now: number, by?: Attribution): Promise<{ durable: Promise<void> }> {
    // Refused before it is queued: an amount the ledger cannot take would fail every write it joined.
    const refused = refuseAmount(amount);
    if (refused) throw refused;
    if (this.unwritten >= this.maxUnwritten) {
      await this.charge(accountId, amount, ref, note, now, by);
      return { durable: Promise.resolve() };
    }
    this.unwritten++;
    const durable = new Promise<void>((resolve) => {
      const done = (): void => {
        this.unwritten--;
        resolve();
      };
      this.enqueue({ accountId, amount, ref, note, now, by, awaited: false, resolve: done, reject: done });
    });
    return { durable };
  }

  /**
   * Resolves once every charge queued so far is written, or `deadlineMs` passed (a database that
   * stays away must not hold a shutdown forever; what is left is reported through `onError`).
   */
  async drain(deadlineMs = 10_000): Promise<void> {
    const deadline = Date.now() + deadlineMs;
    while (this.queue.length > 0 || this.writing) {
      if (Date.now() >= deadline) {
        // The write in flight may still land; it is reported too, since nothing will wait for it.
        if (this.inFlight.length > 0) this.onError(new Error(`${this.inFlight.length} charge(s) still being written at shutdown`), this.inFlight[0]!.ref);
        for (const p of this.queue.splice(0)) {
          this.onError(new Error('not written before shutdown'), p.ref);
          p.reject(new Error('The charge was not written before shutdown.'));
        }
        return;
      }
      // Gathering or paced charges go at once; after a failed write the retry keeps its delay, so a
      // database that is down is not hammered for the whole deadline.
      if (!this.writing && !this.retryTimer) this.flushNow();
      const tick = new Promise((r) => setTimeout(r, 20));
      await (this.writing ? Promise.race([this.writing, tick]) : tick);
    }
  }

  private enqueue(p: Pending): void {
    this.queue.push(p);
    // A caller waiting for its write (chat, admin) never waits for the gather window or the pace, nor does a full batch.
    if (p.awaited || this.queue.length >= this.maxBatch) this.schedule();
    else if (this.gatherMs > 0) this.gather();
    else this.paceThen();
  }

  /** Schedules a write at once, or when the pace allows it. */
  private paceThen(): void {
    const left = this.paceMs === 0 ? 0 : this.lastStart + this.paceMs - performance.now();
    if (left > 0) this.gather(left);
    else this.schedule();
  }

  /** Writes the queue after `delayMs` (the gather window, or what is left of the pace), unless a write is already due, running or timed. */
  private gather(delayMs = this.gatherMs): void {
    if (this.gatherTimer || this.scheduled || this.writing || this.retryTimer) return;
    this.gatherTimer = setTimeout(() => {
      this.gatherTimer = undefined;
      if (!this.writing && !this.retryTimer) this.flushNow();
    }, delayMs);
  }

  /**
   * After a write: what queued meanwhile goes next, at once, or, with a pace (`paceMs`) and only
   * acknowledged charges queued, once the pace has passed since the last write started. A caller
   * waiting for its charge, or a full batch, goes at once.
   */
  private next(): void {
    if (this.queue.length === 0 || this.retryTimer) return;
    if (this.queue.length >= this.maxBatch || this.queue.some((p) => p.awaited)) this.schedule();
    else this.paceThen();
  }

  /** Starts a write on the next turn unless one is in flight (its end starts the next). */
  private schedule(): void {
    if (this.scheduled || this.writing || this.retryTimer) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (!this.writing && !this.retryTimer) this.flushNow();
    });
  }

  private flushNow(): void {
    if (this.retryTimer) {
      clearTimeout(this.retryTimer);
      this.retryTimer = undefined;
    }
    if (this.gatherTimer) {
      clearTimeout(this.gatherTimer);
      this.gatherTimer = undefined;
    }
    const batch = this.queue.splice(0, this.maxBatch);
    if (batch.length === 0) return;
    this.lastStart = performance.now();
    this.inFlight = batch;
    this.writing = this.write(batch).finally(() => {
      this.writing = undefined;
      this.inFlight = [];
      this.next();
    });
  }

  private async write(batch: Pending[]): Promise<void> {
    let results: Awaited<ReturnType<Store['chargeMany']>>;
    try {
      results = await this.store.chargeMany(batch);
    } catch (e) {
      // The whole write failed (database unreachable).
      this.failed(batch, e);
      return;
    }
    const again: Pending[] = [];
    let failure: unknown;
    batch.forEach((p, i) => {
      const r = results[i];
      if (!(r instanceof Error)) return p.resolve(r ?? 'ok');
      if (r instanceof GatewayError) {
        // The store's verdict on this one charge (its account was deleted meanwhile): retrying would not help.
        if (!p.awaited) this.onError(r, p.ref);
        p.reject(r);
      } else {
        // The database failed while writing this one (the store tries items one by one after a
        // failed batch): it may take it next time.
        again.push(p);
        failure ??= r;
      }
    });
    if (again.length > 0) this.failed(again, failure);
    else this.failures = 0;
  }

  /**
   * Charges whose write failed for the database's sake: callers that wait get the error; the
   * acknowledged ones go back to the front of the queue and are tried again after a growing delay.
   */
  private failed(batch: Pending[], e: unknown): void {
    const retry = batch.filter((p) => !p.awaited);
    for (const p of batch) if (p.awaited) p.reject(e);
    if (retry.length === 0) return;
    this.onError(e, retry[0]!.ref);
    this.queue.unshift(...retry);
    const delay = RETRY_MS[Math.min(this.failures++, RETRY_MS.length - 1)]!;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (!this.writing) this.flushNow();
    }, delay);
    this.retryTimer.unref();
  }
}

/** The refusal of an amount the ledger cannot take (not a whole, non-negative, exact number of micros), or undefined. */
function refuseAmount(amount: Micros): GatewayError | undefined {
  if (isMicros(amount)) return undefined;
  return errors.internal('The charge for this request could not be recorded.');
}
