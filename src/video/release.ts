import type { VideoDeps } from './deps.js';

/**
 * Runs a store write that gives (part of) a job's hold back (`write` answers whether this call
 * settled it: only one writer ever does) and, when it did, tells this process's cached balance about
 * the `amount` that came back, so embeddings and chat on the account see it at once
 * (billing/reservations.ts `releasing`). The balance figure is taken before the write starts.
 */
export async function releaseHold(deps: Pick<VideoDeps, 'reservations'>, accountId: string, amount: number, write: () => Promise<boolean>): Promise<boolean> {
  const credit = deps.reservations?.releasing(accountId);
  const settled = await write();
  if (settled) credit?.(amount);
  return settled;
}
