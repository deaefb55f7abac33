import type { VideoDeps } from './deps.js';

/**
 * Runs a store write that gives (part of) a job's hold back (`write` answers whether this call
 * settled it: only one writer ever does) and, when it did, tells this process's cached balance about
 * the `amount` that came back, so embeddings and chat on the account see it at once
 * (billing/reservations.ts `releasing`). The write's place in the order of reads is taken before it
 * starts: a figure read before then lacks the money and gains it, one read while it ran is left as it
 * is (too low, the safe side) and marked unsure, so a refusal on it reads the store again.
 */
export async function releaseHold(deps: Pick<VideoDeps, 'reservations'>, accountId: string, amount: number, write: () => Promise<boolean>): Promise<boolean> {
  const credit = deps.reservations?.releasing(accountId);
  const settled = await write();
  if (settled) credit?.(amount);
  return settled;
}
