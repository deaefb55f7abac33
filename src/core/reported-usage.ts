/**
 * The most tokens a vendor's usage may report for one request before the gateway stops believing
 * it. Far above anything the body limit lets a request carry (a few million tokens), and far below
 * where a price times a count stops being an exact integer of micros: a count past it, like a
 * negative or non-numeric one, is treated as no usage at all (the caller falls back to its own
 * count), so one broken answer can neither bill an absurd amount nor hand the ledger a number it
 * cannot store.
 */
export const MAX_REPORTED_TOKENS = 100_000_000;

/** A vendor-reported token count as a whole number, or undefined when it is not a believable one. */
export function reportedTokens(v: unknown, round: (n: number) => number = Math.round): number | undefined {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) return undefined;
  const n = round(v);
  return n <= MAX_REPORTED_TOKENS ? n : undefined;
}
