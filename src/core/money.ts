/**
 * Money is integer micro-units (1 currency unit = 1,000,000 micros) everywhere inside the gateway.
 * Configured prices are currency units; they are converted once at start.
 */
export type Micros = number;
export const MICROS_PER_UNIT = 1_000_000;

/** The largest amount (and balance) the ledger holds: the largest whole number a JS number keeps exactly, in micros. */
export const MAX_MICROS: Micros = Number.MAX_SAFE_INTEGER;
const tooLarge = `is larger than ${formatMicros(MAX_MICROS)}, the most the ledger can hold`;

/** An amount refused by parseMoney; the message says why, to be put after the field's name. */
export class MoneyFormatError extends Error {
  override name = 'MoneyFormatError';
}

/**
 * Reads an amount of currency units into micros exactly, or refuses it. Accepted: a plain decimal
 * number with at most 6 decimals, as a string ("20", "5.5", "0.000001"; spaces around it are ignored,
 * as a form field may carry them) or a JSON number (20, 5.5). Everything else is refused rather than
 * read loosely, because Number() would take "0x10" as 16, "1e3" as 1000 and a blank as 0, and rounding
 * would quietly change "1.0000005". A minus sign only where `negative` allows it.
 */
export function parseMoney(value: unknown, opts: { negative?: boolean } = {}): Micros {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new MoneyFormatError('must be a finite number of currency units');
    // The shortest decimal that reads back as this number is what the sender wrote (5.5, 0.07), not
    // the binary fraction's long expansion. It uses an exponent only below 1e-6 or from 1e21 up.
    text = String(value);
    if (text.includes('e')) {
      throw new MoneyFormatError(Math.abs(value) < 1 ? 'has more than 6 decimal places (the smallest amount is 0.000001)' : tooLarge);
    }
  } else if (typeof value === 'string') {
    text = value.trim();
  } else {
    throw new MoneyFormatError('must be an amount of currency units, as a string ("5.5") or a number');
  }
  const m = /^(-?)([0-9]+)(?:\.([0-9]+))?$/.exec(text);
  if (!m) throw new MoneyFormatError('must be a plain decimal number of currency units, like "20" or "5.5"');
  const [, minus, units, fraction = ''] = m;
  if (fraction.length > 6) throw new MoneyFormatError('has more than 6 decimal places (the smallest amount is 0.000001)');
  if (minus && !opts.negative) throw new MoneyFormatError('must not be negative');
  // In BigInt, so that a long run of digits is judged by its value, not by a float that rounded it.
  const micros = BigInt(units!) * BigInt(MICROS_PER_UNIT) + BigInt(fraction.padEnd(6, '0'));
  if (micros > BigInt(MAX_MICROS)) throw new MoneyFormatError(tooLarge);
  const n = Number(micros);
  return minus && n !== 0 ? -n : n;
}

/** Converts an amount of currency units (a configured price) to micros by parseMoney's rules; throws on anything else. */
export function toMicros(amount: number | string): Micros {
  try {
    return parseMoney(amount, { negative: true });
  } catch (e) {
    if (e instanceof MoneyFormatError) throw new MoneyFormatError(`the amount ${String(amount).slice(0, 40)} ${e.message}`);
    throw e;
  }
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

/**
 * Price per second (micros) x seconds, rounded up to a whole micro so fractions never become free.
 * A duration is a decimal the binary product only comes near: 1000 x 16.1 is 16100.000000000002,
 * which rounded up billed a micro nobody used. A product within a few units of its last place of a
 * whole number is that number; real fractions of a micro are far larger than that.
 */
export function costForSeconds(perSecondMicros: Micros, seconds: number): Micros {
  const product = perSecondMicros * seconds;
  const whole = Math.round(product);
  if (Math.abs(product - whole) <= Math.abs(product) * 4 * Number.EPSILON) return whole;
  return Math.ceil(product);
}

/** Price per million tokens (micros) x tokens, rounded up to a whole micro. */
export function costForTokens(perMillionMicros: Micros, tokens: number): Micros {
  return Math.ceil((perMillionMicros * tokens) / 1_000_000);
}
