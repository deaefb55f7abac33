import { uuidV7 } from './uuid.js';

const MAX_MS = 2 ** 48 - 1;

/**
 * A UUID in RFC 9562's version 7 layout: the first 48 bits are `ms` (unix milliseconds), the
 * other 74 free bits random, so it is as unique as a random UUID but sorts by time.
 *
 * Why: ledger refs go into a unique index (ledger_ref_kind). Random refs put each insert on a
 * different page of that index, which a commit then writes back, and which is ever less likely
 * to be cached as the ledger grows; time-ordered refs land on the last pages. Measured with
 * better-sqlite3 on a ledger of ~100,000 rows, 24 charges per transaction: ~27 us of CPU per
 * charge with random refs, ~10 us with time-ordered ones.
 */
export function timeOrderedUuid(ms: number): string {
  return uuidV7(Math.floor(Number.isFinite(ms) ? Math.min(Math.max(ms, 0), MAX_MS) : 0));
}
