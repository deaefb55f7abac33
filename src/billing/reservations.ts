import { isMicros, type Micros } from '../core/money.js';
import { SharedFlights } from '../core/shared-flights.js';
import type { Store } from '../store/types.js';

/** How long a balance read from the store is trusted (top-ups and other instances show after this). */
const BALANCE_TTL_MS = 1_000;

interface View {
  balance: Micros;
  /** When the read that produced it started. */
  at: number;
  refreshing?: boolean;
}

export type Release = (charged?: Micros, durable?: Promise<unknown>) => void;

/**
 * Money promised to requests still in flight in this process (embeddings, chat), so that parallel
 * requests cannot all pass the balance check on the same funds and overdraw the account. The
 * amount is added before the balance is looked at, so a concurrent request always sees it.
 *
 * The balance itself is read from the store at most once a second per account and lowered by what
 * this process charges meanwhile (`settle`), so the hot path does no read per request (the read is
 * refreshed in the background while traffic flows). A charge acknowledged before it is written
 * stays counted as in flight until it is in the store. Scope: one
 * gateway process; several instances sharing a database can each admit in-flight requests on the
 * same funds for up to a second (the vendor-reported usage is charged afterwards either way). Video
 * jobs use real ledger holds instead; those taken by this process meet the in-flight amounts here
 * (`storeHold`).
 */
export class Reservations {
  private readonly pending = new Map<string, Micros>();
  /** The part of `pending` that is store holds being taken (`storeHold`): the store checks those itself. */
  private readonly holding = new Map<string, Micros>();
  private readonly views = new Map<string, View>();
  /** Balance reads in flight by account (see `read`). */
  private readonly reading = new SharedFlights<string, Micros>(BALANCE_TTL_MS);

  constructor(
    private readonly store: Pick<Store, 'getAccount'>,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Returns a release function, or undefined when the balance cannot cover this request too.
   * Call the release with what was actually charged (0 when nothing was), and, when that charge
   * was acknowledged before it reached the store, with the promise of its write: until then the
   * charge keeps counting as in flight, so neither this process nor a balance read meanwhile can
   * spend the same money twice.
   */
  async reserve(accountId: string, amount: Micros): Promise<Release | undefined> {
    if (amount <= 0) return (charged = 0, durable) => this.settle(accountId, charged, durable);
    // More than any balance can hold (a chat cap of 1e300 tokens): refused without being added, as
    // an infinite amount added and taken away again leaves NaN, which no balance ever covers again.
    if (!isMicros(amount)) return undefined;
    this.add(accountId, amount);
    const total = this.pending.get(accountId)!;
    let released = false;
    const release: Release = (charged = 0, durable) => {
      if (released) return;
      released = true;
      this.add(accountId, -amount);
      this.settle(accountId, charged, durable);
    };
    try {
      // A fresh cached view answers without a read (and without another promise).
      if ((this.cachedBalance(accountId) ?? (await this.read(accountId, this.now()))) >= total) return release;
    } catch (e) {
      release();
      throw e;
    }
    release();
    return undefined;
  }

  /**
   * A hold the store takes and checks itself (a video job's): `take` is handed what this process
   * has in flight on the account besides such holds, for the store's balance check to cover too
   * (that money is promised to requests still running and is not out of the balance yet). While it
   * is being taken the hold counts as in flight here, so a request admitted meanwhile sees it; once
   * taken (`taken` says so of the store's answer) the cached balance drops by it, as the store's
   * did. Without both, one process let embeddings and chat spend, on a balance read before a video
   * hold, money the hold had already taken, and a hold take money those requests were promised.
   */
  async storeHold<R>(accountId: string, amount: Micros, take: (inFlight: Micros) => Promise<R>, taken: (answer: R) => boolean): Promise<R> {
    const inFlight = this.held(accountId) - (this.holding.get(accountId) ?? 0);
    this.add(accountId, amount);
    this.holding.set(accountId, (this.holding.get(accountId) ?? 0) + amount);
    try {
      const answer = await take(inFlight);
      // In the same turn as the in-flight amount is removed below: no request can miss the hold in both.
      if (taken(answer)) this.lower(accountId, amount, this.now());
      return answer;
    } finally {
      this.add(accountId, -amount);
      const left = (this.holding.get(accountId) ?? 0) - amount;
      if (left <= 0) this.holding.delete(accountId);
      else this.holding.set(accountId, left);
    }
  }

  /**
   * Money about to come back to the account outside this process's requests (a video hold released
   * as the job settles or is refused). Call it before the store write; the function it returns, called
   * once the write has landed, raises the cached balance by what came back, if that figure was read
   * before the write began: without it the account looked short for up to a second after a failed
   * video. A figure read while the write ran may hold the money or not and is left as it is (too low
   * is the safe side) until its next read; one read after holds it already.
   */
  releasing(accountId: string): (amount: Micros) => void {
    const before = this.now();
    return (amount) => {
      const v = this.views.get(accountId);
      if (amount > 0 && v && v.at < before) v.balance += amount;
    };
  }

  /** Drops the cached balances (after a top-up on this instance, so it shows at once). */
  forgetBalances(): void {
    this.views.clear();
    this.reading.clear();
  }

  /** In-flight amount for an account (for tests and diagnostics). */
  held(accountId: string): Micros {
    return this.pending.get(accountId) ?? 0;
  }

  /**
   * The cached balance, or undefined when there is none younger than its lifetime (an account idle
   * for a second): the caller then waits for the store. Past half its lifetime a read starts in the
   * background while requests go on with the cached figure.
   */
  private cachedBalance(accountId: string): Micros | undefined {
    const t = this.now();
    const v = this.views.get(accountId);
    if (!v || t - v.at >= BALANCE_TTL_MS) return undefined;
    if (t - v.at >= BALANCE_TTL_MS / 2 && !v.refreshing) {
      v.refreshing = true;
      void this.read(accountId, t).catch(() => (v.refreshing = false));
    }
    return v.balance;
  }

  /**
   * A read of the account's balance, shared by every request that needs one while it runs: after an
   * idle spell the first requests of a burst all find the view expired, and one read each sent a
   * herd of queries to the store. Only a read that started within the view's lifetime is joined, so
   * a slow store cannot make an old figure look fresh; `forgetBalances` drops the reads in flight.
   */
  private read(accountId: string, t: number): Promise<Micros> {
    return this.reading.join(accountId, t, () => this.readNow(accountId, t));
  }

  private async readNow(accountId: string, t: number): Promise<Micros> {
    const account = await this.store.getAccount(accountId);
    const balance = account ? account.balance : Number.NEGATIVE_INFINITY;
    if (this.views.size > 100_000) this.views.clear();
    const old = this.views.get(accountId);
    // A slower read that started earlier must not replace a fresher one.
    if (!old || old.at <= t) this.views.set(accountId, { balance, at: t });
    return balance;
  }

  private add(accountId: string, delta: Micros): void {
    const left = (this.pending.get(accountId) ?? 0) + delta;
    if (left <= 0) this.pending.delete(accountId);
    else this.pending.set(accountId, left);
  }

  /**
   * A charge made: the cached view drops by it once it is in the store (at once when it already
   * is). Until then it is held as in flight. A view read before the write landed does not hold it
   * yet and is lowered; one read after it already does.
   */
  private settle(accountId: string, charged: Micros, durable?: Promise<unknown>): void {
    if (charged <= 0) return;
    if (!durable) {
      this.lower(accountId, charged, Number.POSITIVE_INFINITY);
      return;
    }
    this.add(accountId, charged);
    void durable.then(() => {
      const landed = this.now();
      this.add(accountId, -charged);
      this.lower(accountId, charged, landed);
    });
  }

  private lower(accountId: string, charged: Micros, landedAt: number): void {
    const v = this.views.get(accountId);
    if (v && v.at <= landedAt) v.balance -= charged;
  }
}
