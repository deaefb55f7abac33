import type { Micros } from '../core/money.js';
import type { Store } from '../store/types.js';

/** How long a balance read from the store is trusted (top-ups and other instances show after this). */
export const BALANCE_TTL_MS = 1_000;

/**
 * A balance as this process knows it: the store's figure, plus what this process's own writes
 * changed that the figure cannot hold.
 *
 * Writes and reads are ordered by `tick` numbers (one counter, one process). A write that begins at
 * tick `from` cannot be in the store before then; a read issued at tick `issued` and answered at
 * `resolved` executed in between. So a read answered before a write began certainly lacks it (the
 * write is applied to the figure exactly), one issued after the write landed certainly holds it, and
 * any other read may hold it or not: `unsure`. An unsure figure errs on the safe side (a debit is
 * taken off it, a credit is not added), and a refusal that rests on one reads the store again once
 * the writes have landed (reservations.ts), so no write is ever counted twice in a decision for long.
 */
export interface View {
  balance: Micros;
  /** When the read was issued (Date.now() or the injected clock): the figure's age. */
  at: number;
  issued: number;
  resolved: number;
  unsure: boolean;
  refreshing?: boolean;
}

/** A read of the store in flight: what landed meanwhile, which it may or may not hold. */
interface Reading {
  at: number;
  issued: number;
  generation: number;
  /** Debits that landed while it ran, taken off its figure (it may lack them). */
  debits: Micros;
  unsure: boolean;
  value?: Promise<View>;
}

/**
 * The balance views of every account, and the reads that refresh them: a read in flight is joined
 * by every caller that asks while it runs and accepts it (issued late enough and young enough), so
 * a burst after an idle spell sends one query, not a herd.
 */
export class BalanceViews {
  private tick = 0;
  private generation = 0;
  private readonly views = new Map<string, View>();
  private readonly readings = new Map<string, Set<Reading>>();

  constructor(
    private readonly store: Pick<Store, 'getAccount'>,
    private readonly now: () => number,
  ) {}

  /** The next order number (see View). */
  next(): number {
    return ++this.tick;
  }

  /**
   * The cached view if it is younger than its lifetime, else undefined (the caller reads). Past half
   * its lifetime a read starts in the background while requests go on with the cached figure.
   */
  cached(accountId: string): View | undefined {
    const t = this.now();
    const v = this.views.get(accountId);
    if (!v || t - v.at >= BALANCE_TTL_MS) return undefined;
    if (t - v.at >= BALANCE_TTL_MS / 2 && !v.refreshing) {
      v.refreshing = true;
      void this.read(accountId).catch(() => (v.refreshing = false));
    }
    return v;
  }

  /**
   * A view from a read issued at or after tick `notBefore`: one in flight that qualifies and is
   * younger than the view lifetime is joined, so a slow store cannot make an old figure look fresh.
   */
  read(accountId: string, notBefore = 0): Promise<View> {
    const t = this.now();
    let set = this.readings.get(accountId);
    if (set) for (const r of set) if (r.issued >= notBefore && t - r.at < BALANCE_TTL_MS && r.generation === this.generation) return r.value!;
    if (!set) this.readings.set(accountId, (set = new Set()));
    const r: Reading = { at: t, issued: this.next(), generation: this.generation, debits: 0, unsure: false };
    set.add(r);
    r.value = this.run(accountId, r, set);
    return r.value;
  }

  /** A write of this process landed in the store (see View): every figure it may be missing learns of it. */
  landed(accountId: string, delta: Micros, from: number, sure = true): void {
    const v = this.views.get(accountId);
    if (v) {
      const lacks = sure && v.resolved < from;
      if (lacks || delta < 0) v.balance += delta;
      if (!lacks) v.unsure = true;
    }
    for (const r of this.readings.get(accountId) ?? []) {
      if (delta < 0) r.debits -= delta;
      r.unsure = true;
    }
  }

  /**
   * Drops the views and the reads in flight (after a top-up on this instance, so it shows at once).
   * A caller waiting on a read in flight gets one issued after the forget instead (`run`).
   */
  forget(): void {
    this.views.clear();
    this.readings.clear();
    this.generation++;
  }

  private async run(accountId: string, r: Reading, set: Set<Reading>): Promise<View> {
    try {
      const account = await this.store.getAccount(accountId);
      // A read from before `forget` heard of no write that landed since (its reading was dropped):
      // it decides nothing and is not kept, a read issued now is (after a forget, a rare event),
      // no older than the one its callers asked for.
      if (r.generation !== this.generation) return this.read(accountId, r.issued);
      const view: View = {
        balance: (account ? account.balance : Number.NEGATIVE_INFINITY) - r.debits,
        at: r.at,
        issued: r.issued,
        resolved: this.next(),
        unsure: r.unsure,
      };
      // An older read never replaces a newer one.
      const old = this.views.get(accountId);
      if (old && old.issued > r.issued) return old;
      if (this.views.size > 100_000) this.views.clear();
      this.views.set(accountId, view);
      return view;
    } finally {
      set.delete(r);
      if (set.size === 0 && this.readings.get(accountId) === set) this.readings.delete(accountId);
    }
  }
}
