import type { Micros } from '../core/money.js';
import type { Store } from '../store/types.js';

/**
 * Money promised to requests still in flight in this process (embeddings, chat), so that parallel
 * requests cannot all pass the balance check on the same funds and overdraw the account. The
 * amount is added before the balance is read, so a concurrent request always sees it.
 *
 * Scope: one gateway process. Several instances sharing a database can still overdraw by at most
 * what their in-flight requests cost, because the vendor's actual usage is charged after the call;
 * video jobs use real ledger holds instead.
 */
export class Reservations {
  private readonly pending = new Map<string, Micros>();

  constructor(private readonly store: Pick<Store, 'canAfford'>) {}

  /** Returns a release function, or undefined when the balance cannot cover this request too. */
  async reserve(accountId: string, amount: Micros): Promise<(() => void) | undefined> {
    if (amount <= 0) return () => undefined;
    const total = (this.pending.get(accountId) ?? 0) + amount;
    this.pending.set(accountId, total);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const left = (this.pending.get(accountId) ?? 0) - amount;
      if (left <= 0) this.pending.delete(accountId);
      else this.pending.set(accountId, left);
    };
    try {
      if (await this.store.canAfford(accountId, total)) return release;
    } catch (e) {
      release();
      throw e;
    }
    release();
    return undefined;
  }

  /** In-flight amount for an account (for tests and diagnostics). */
  held(accountId: string): Micros {
    return this.pending.get(accountId) ?? 0;
  }
}
