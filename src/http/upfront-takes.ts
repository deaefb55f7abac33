import { ByteShares } from './body-shares.js';

/**
 * The part of the request-body budget that keyed callers' small bodies may take as declared, on
 * arrival (body-budget.ts), rather than as their bytes arrive. Taking the declared length is the
 * cheap way for the common request (no metering stream), but a key that opened 2,100 connections
 * declaring 64 KiB each and then sent a byte every 20 s held the whole budget with a few kilobytes,
 * shedding every account's bodies until the request deadline. So these takes hold at most half of
 * the budget in all, and one account at most an eighth of it; past either, a body is metered like
 * any other (it holds only what it has sent), never refused for this.
 *
 * Accounts are kept once seen, with a count that returns to zero: removing and adding an entry on
 * every request would churn the map's tables (see inflight-list.ts), and accounts are few.
 */
export class UpfrontTakes extends ByteShares {
  constructor(budgetLimit: number) {
    super(Math.floor(budgetLimit / 2), Math.floor(budgetLimit / 8), false);
  }
}
