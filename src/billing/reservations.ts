import { isMicros, type Micros } from '../core/money.js';
import type { Store } from '../store/types.js';
import { BalanceViews, type View } from './balance-views.js';

export type Release = (charged?: Micros, durable?: Promise<unknown>) => void;

/** What a store hold's answer means to the in-flight accounting (`storeHold`). */
export type HoldOutcome = 'taken' | 'short' | 'refused';

/**
 * How long a decision that may rest on a write counted twice waits for this process's writes in
 * flight to land before it reads the store again; and how many times it does so at most.
 */
const SETTLE_WAIT_MS = 500;
const RECHECKS = 2;

/** A debit of this process on its way to the store: a charge acknowledged before its write, or a video hold. */
interface Debit {
  amount: Micros;
  kind: 'charge' | 'hold';
  /** The tick before which it cannot be in the store (balance-views.ts). */
  from: number;
  /** The tick at which it left the in-flight sum; undefined while on its way. */
  landed?: number;
  /** Callers waiting for it to land (made only when one waits: most debits land unwatched). */
  waiters?: Array<() => void>;
}

interface Account {
  /** Promised to requests still running (embeddings, chat): not out of the balance yet. */
  reserved: Micros;
  /** Debits in flight, oldest first. */
  debits: Set<Debit>;
  inFlight: Micros;
}

/**
 * Money promised to requests still in flight in this process (embeddings, chat), so that parallel
 * requests cannot all pass the balance check on the same funds and overdraw the account.
 *
 * The balance itself is read from the store at most once a second per account (balance-views.ts)
 * and corrected by what this process writes meanwhile, so the hot path does no read per request.
 * The decision is the figure, less the debits still on their way to the store (charges acknowledged
 * before their write, video holds being taken), less what running requests were promised. A figure
 * read while a write was on its way may already hold it; counted twice, it would refuse a request
 * the balance covers, so such a refusal waits for the writes to land and reads again: near the
 * limit the answer is exact, and it never admits on money the store does not have. Scope: one
 * gateway process; several instances sharing a database can each admit in-flight requests on the
 * same funds for up to a second (the vendor-reported usage is charged afterwards either way). Video
 * jobs use real ledger holds (`storeHold`), which meet the in-flight amounts here.
 */
export class Reservations {
  private readonly accounts = new Map<string, Account>();
  private readonly views: BalanceViews;

  constructor(store: Pick<Store, 'getAccount'>, now: () => number = Date.now) {
    this.views = new BalanceViews(store, now);
  }

  /**
   * Returns a release function, or undefined when the balance cannot cover this request too.
   * Call the release with what was actually charged (0 when nothing was), and, when that charge
   * was acknowledged before it reached the store, with the promise of its write: until then the
   * charge counts as on its way, so neither this process nor a balance read meanwhile can spend
   * the same money twice.
   */
  async reserve(accountId: string, amount: Micros): Promise<Release | undefined> {
    // No charge of this request can reach the store before this point.
    const from = this.views.next();
    if (amount <= 0) return this.releaser(accountId, 0, from);
    // More than any balance can hold (a chat cap of 1e300 tokens): refused without being counted.
    if (!isMicros(amount)) return undefined;
    let notBefore = 0;
    // Rechecks after writes in doubt, and waits for pending video holds, each bounded on its own.
    let rechecks = 0;
    let holdWaits = 0;
    for (;;) {
      const view = (notBefore === 0 ? this.views.cached(accountId) : undefined) ?? (await this.views.read(accountId, notBefore));
      // From here to the return nothing awaits: no other request can decide on the same funds meanwhile.
      const acc = this.account(accountId);
      if (view.balance - acc.inFlight - acc.reserved >= amount) {
        acc.reserved += amount;
        return this.releaser(accountId, amount, from);
      }
      this.tidy(accountId, acc);
      // Video holds being taken count as on their way until the store answers, and near the limit the
      // store refuses most of them (a refused hold never moves the balance): a request that only they
      // stand in the way of waits for their answers, then decides again on what was really taken.
      const holds = pendingHolds(acc);
      if (holdWaits < RECHECKS && holds.length > 0 && view.balance - (acc.inFlight - sumOf(holds)) - acc.reserved >= amount) {
        holdWaits++;
        await this.settled(holds);
        notBefore = 0;
        continue;
      }
      if (rechecks >= RECHECKS || !this.unsure(acc, view)) return undefined;
      rechecks++;
      // A read issued after the writes in doubt have landed holds them exactly; the refusals of a
      // burst wait for the same writes, so they share that read.
      const refusedAt = this.views.next();
      const doubtful = this.maybeHeld(acc, view);
      await this.settled(doubtful);
      notBefore = Math.max(refusedAt, ...doubtful.map((d) => d.landed ?? this.views.next()));
    }
  }

  /**
   * A hold the store takes and checks itself (a video job's): `take` is handed what this process
   * has in flight on the account besides such holds (promised to running requests, or charged and
   * not yet written), for the store's balance check to cover too. While it is being taken the hold
   * counts as a debit on its way, so a request admitted meanwhile sees it; once taken the cached
   * balance learns of it. A charge this process is still writing may already be in the store,
   * counted there and in `inFlight` both: a hold refused as `short` is tried again once those
   * charges have landed, so a hold the balance covers is not refused for it.
   */
  async storeHold<R>(accountId: string, amount: Micros, take: (inFlight: Micros) => Promise<R>, outcome: (answer: R) => HoldOutcome): Promise<R> {
    // The caller refuses amounts no balance holds; one slipping through must not poison the sums.
    if (!isMicros(amount)) return take(0);
    const hold = this.debit(accountId, amount, 'hold', this.views.next());
    try {
      for (let round = 0; ; round++) {
        const acc = this.account(accountId);
        const charges = [...acc.debits].filter((d) => d.kind === 'charge');
        const answer = await take(acc.reserved + charges.reduce((sum, d) => sum + d.amount, 0));
        const verdict = outcome(answer);
        if (verdict === 'taken') {
          this.landDebit(accountId, hold);
          return answer;
        }
        if (verdict === 'refused' || round >= RECHECKS || charges.length === 0 || !(await this.settled(charges, true))) {
          this.dropDebit(accountId, hold);
          return answer;
        }
      }
    } catch (e) {
      // The store may or may not have taken it: counted as taken (the safe side) until a read says.
      this.landDebit(accountId, hold, false);
      throw e;
    }
  }

  /**
   * Money about to come back to the account outside this process's requests (a video hold released
   * as the job settles or is refused). Call it before the store write; the function it returns, called
   * once the write has landed with what came back, raises the cached balance by it where the figure
   * lacks it (balance-views.ts).
   */
  releasing(accountId: string): (amount: Micros) => void {
    const from = this.views.next();
    return (amount) => {
      if (amount > 0 && isMicros(amount)) this.views.landed(accountId, amount, from);
    };
  }

  /** Drops the cached balances (after a top-up on this instance, so it shows at once). */
  forgetBalances(): void {
    this.views.forget();
  }

  /** In-flight amount for an account: promised, and debits on their way to the store (for tests and diagnostics). */
  held(accountId: string): Micros {
    const acc = this.accounts.get(accountId);
    return acc ? acc.reserved + acc.inFlight : 0;
  }

  /** The release of a reservation of `amount` (0: nothing was promised): once, whatever calls it again. */
  private releaser(accountId: string, amount: Micros, from: number): Release {
    let released = false;
    return (charged = 0, durable) => {
      if (released) return;
      released = true;
      if (amount > 0) {
        const acc = this.account(accountId);
        acc.reserved -= amount;
        this.tidy(accountId, acc);
      }
      this.charged(accountId, charged, from, durable);
    };
  }

  /** A charge made: on its way until `durable` settles (at once without one: it is in the store already). */
  private charged(accountId: string, charged: Micros, from: number, durable?: Promise<unknown>): void {
    if (!(charged > 0) || !isMicros(charged)) return;
    if (!durable) {
      this.views.landed(accountId, -charged, from);
      return;
    }
    const d = this.debit(accountId, charged, 'charge', from);
    const land = (): void => this.landDebit(accountId, d);
    void durable.then(land, land);
  }

  private debit(accountId: string, amount: Micros, kind: Debit['kind'], from: number): Debit {
    const d: Debit = { amount, kind, from };
    const acc = this.account(accountId);
    acc.debits.add(d);
    acc.inFlight += amount;
    return d;
  }

  /** In the same turn as it leaves the in-flight sum, the figure takes it: no decision misses it in both. */
  private landDebit(accountId: string, d: Debit, sure = true): void {
    if (this.dropDebit(accountId, d)) this.views.landed(accountId, -d.amount, d.from, sure);
  }

  /** Takes a debit out of the in-flight sum (once); false when it was out already. */
  private dropDebit(accountId: string, d: Debit): boolean {
    const acc = this.accounts.get(accountId);
    if (!acc?.debits.delete(d)) return false;
    acc.inFlight -= d.amount;
    d.landed = this.views.next();
    for (const w of d.waiters ?? []) w();
    this.tidy(accountId, acc);
    return true;
  }

  private whenLanded(d: Debit): Promise<void> {
    if (d.landed !== undefined) return Promise.resolve();
    return new Promise((r) => (d.waiters ??= []).push(r));
  }

  /** Whether the figure may count one of this process's writes twice (see View). */
  private unsure(acc: Account, view: View): boolean {
    return view.unsure || this.maybeHeld(acc, view).length > 0;
  }

  /** Debits on their way that the figure may already hold: they began before its read was answered. */
  private maybeHeld(acc: Account, view: View): Debit[] {
    const out: Debit[] = [];
    for (const d of acc.debits) if (d.from <= view.resolved) out.push(d);
    return out;
  }

  /** Waits for debits to land, `SETTLE_WAIT_MS` at most; whether any did (`any`) or all did. */
  private async settled(debits: Debit[], any = false): Promise<boolean> {
    if (debits.length === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((r) => (timer = setTimeout(() => r(false), SETTLE_WAIT_MS)));
    const landed = any ? Promise.race(debits.map((d) => this.whenLanded(d))) : Promise.all(debits.map((d) => this.whenLanded(d)));
    try {
      return await Promise.race([landed.then(() => true), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private account(accountId: string): Account {
    let acc = this.accounts.get(accountId);
    if (!acc) this.accounts.set(accountId, (acc = { reserved: 0, debits: new Set(), inFlight: 0 }));
    return acc;
  }

  private tidy(accountId: string, acc: Account): void {
    if (acc.reserved <= 0 && acc.debits.size === 0) this.accounts.delete(accountId);
  }
}

/** The video holds of an account still being taken in the store. */
function pendingHolds(acc: Account): Debit[] {
  const out: Debit[] = [];
  for (const d of acc.debits) if (d.kind === 'hold') out.push(d);
  return out;
}

function sumOf(debits: readonly Debit[]): Micros {
  let n = 0;
  for (const d of debits) n += d.amount;
  return n;
}
