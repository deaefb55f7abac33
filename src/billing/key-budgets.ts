import type { ApiKeyRecord } from '../store/types.js';
import { isMicros, type Micros } from '../core/money.js';
import { errors } from '../core/errors.js';
import type { Store } from '../store/types.js';

/** Settles a key-budget reservation with what was really charged (0 when nothing was). */
export type BudgetSettle = (charged: Micros) => Promise<void>;

const NOTHING: BudgetSettle = async () => undefined;

/**
 * Key budgets for synchronous requests (embeddings, chat). A key with a budget has the request's
 * estimate counted against it in the store before any upstream call (a conditional UPDATE, so the
 * check holds across instances exactly like a video hold); the answer's real cost then replaces
 * the estimate. A key without a budget costs nothing here: no store access at all.
 *
 * If the process dies between the two steps the estimate stays counted: the budget errs on the
 * side of refusing, never of overspending.
 */
export class KeyBudgets {
  constructor(
    private readonly store: Pick<Store, 'reserveKeySpend' | 'adjustKeySpend'>,
    private readonly now: () => number,
    private readonly onAdjustError: (e: unknown) => void = () => undefined,
  ) {}

  /** `refusal`: the 402's message when the estimate does not fit (the default names the budget only). */
  async reserve(key: Pick<ApiKeyRecord, 'id' | 'budget'>, estimate: Micros, refusal?: string): Promise<BudgetSettle> {
    if (!key.budget) return NOTHING;
    // More than any budget can hold: the store would refuse the figure itself (a 400 about 'amount').
    if (!isMicros(estimate)) throw errors.keyBudgetExceeded(refusal);
    const at = this.now();
    if ((await this.store.reserveKeySpend(key.id, estimate, at)) === 'exceeded') throw errors.keyBudgetExceeded(refusal);
    let settled = false;
    return async (charged) => {
      if (settled) return;
      settled = true;
      try {
        await this.store.adjustKeySpend(key.id, charged - estimate, at);
      } catch (e) {
        // The answer is already paid for; a failed correction only leaves the estimate counted.
        this.onAdjustError(e);
      }
    };
  }
}
