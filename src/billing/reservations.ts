import type { Micros } from '../core/money.js';
import type { Store } from '../store/types.js';

/** How long a balance read from the store is trusted (top-ups and other instances show after this). */
const BALANCE_TTL_MS = 1_000;

interface View {
  balance: Micros;
  at: number;
}

/**
 * Money promised to requests still in flight in this process (embeddings, chat), so that parallel
 * requests cannot all pass the balance check on the same funds and overdraw the account. The
 * amount is added before the balance is looked at, so a concurrent request always sees it.
 *
 * The balance itself is read from the store at most once a second per account and lowered by what
 * this process charges meanwhile (`settle`), so the hot path does no read per request. Scope: one
 * gateway process; several instances sharing a database can each admit in-flight requests on the
 * same funds for up to a second (the vendor-reported usage is charged afterwards either way). Video
 * jobs use real ledger holds instead.
 */
export class Reservations {
  private readonly pending = new Map<string, Micros>();
  private readonly views = new Map<string, View>();

  constructor(
    private readonly store: Pick<Store, 'getAccount'>,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Returns a release function, or undefined when the balance cannot cover this request too.
   * Call the release with what was actually charged (0 when nothing was).
   */
  async reserve(accountId: string, amount: Micros): Promise<((charged?: Micros) => void) | undefined> {
    if (amount <= 0) return (charged = 0) => this.lower(accountId, charged);
    const total = (this.pending.get(accountId) ?? 0) + amount;
    this.pending.set(accountId, total);
    let released = false;
    const release = (charged: Micros = 0) => {
      if (released) return;
      released = true;
      const left = (this.pending.get(accountId) ?? 0) - amount;
      if (left <= 0) this.pending.delete(accountId);
      else this.pending.set(accountId, left);
      this.lower(accountId, charged);
    };
    try {
      if ((await this.balance(accountId)) >= total) return release;
    } catch (e) {
      release();
      throw e;
    }
    release();
    return undefined;
  }

  /** Drops the cached balances (after a top-up on this instance, so it shows at once). */
  forgetBalances(): void {
    this.views.clear();
  }

  /** In-flight amount for an account (for tests and diagnostics). */
  held(accountId: string): Micros {
    return this.pending.get(accountId) ?? 0;
  }

  private async balance(accountId: string): Promise<Micros> {
    const t = this.now();
    const v = this.views.get(accountId);
    if (v && t - v.at < BALANCE_TTL_MS) return v.balance;
    const account = await this.store.getAccount(accountId);
    const balance = account ? account.balance : Number.NEGATIVE_INFINITY;
    if (this.views.size > 100_000) this.views.clear();
    this.views.set(accountId, { balance, at: t });
    return balance;
  }

  private lower(accountId: string, charged: Micros): void {
    const v = this.views.get(accountId);
    if (v && charged > 0) v.balance -= charged;
  }
}
