/**
 * Money is integer micro-units (1 currency unit = 1,000,000 micros) everywhere inside the gateway.
 * Configured prices are currency units; they are converted once at start.
 */
export type Micros = number;
export const MICROS_PER_UNIT = 1_000_000;

/** Converts a decimal amount of currency units to micros, rejecting what cannot be represented. */
export function toMicros(amount: number | string): Micros {
  const n = typeof amount === 'string' ? Number(amount.trim()) : amount;
  if (!Number.isFinite(n)) throw new Error(`not a valid amount: ${String(amount)}`);
  const micros = Math.round(n * MICROS_PER_UNIT);
  if (!Number.isSafeInteger(micros)) throw new Error(`amount out of range: ${String(amount)}`);
  return micros;
}

/** Whether `v` is an amount the ledger can hold: a whole, exactly representable number of micros, at least `min`. */
export function isMicros(v: number, min = 0): boolean {
  return Number.isSafeInteger(v) && v >= min;
}

export function formatMicros(m: Micros): string {
  const sign = m < 0 ? '-' : '';
  const abs = Math.abs(m);
  const units = Math.floor(abs / MICROS_PER_UNIT);
  const frac = String(abs % MICROS_PER_UNIT).padStart(6, '0');
  return `${sign}${units}.${frac}`;
}

/** Price per second (micros) x seconds, rounded up to a whole micro so fractions never become free. */
export function costForSeconds(perSecondMicros: Micros, seconds: number): Micros {
  return Math.ceil(perSecondMicros * seconds);
}

/** Price per million tokens (micros) x tokens, rounded up to a whole micro. */
export function costForTokens(perMillionMicros: Micros, tokens: number): Micros {
  return Math.ceil((perMillionMicros * tokens) / 1_000_000);
}
