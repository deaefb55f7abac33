import { MICROS_PER_UNIT, type Micros } from '../core/money.js';

/**
 * `usage.cost` on answers: what the request cost, in currency units (the unit prices are configured
 * in), as a JSON number. Micros are whole numbers, so the value has at most six decimals.
 */
export function costUnits(micros: Micros): number {
  return micros / MICROS_PER_UNIT;
}

const USAGE_KEY = Buffer.from('"usage"');
const TAIL_BYTES = 4096;

function skipSpace(b: Buffer, i: number): number {
  while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
  return i;
}

/**
 * Adds `"cost"` as the first member of the top-level `usage` object of a forwarded OpenAI-shaped
 * body without parsing it (vectors are large). The forwarding path has already checked that the
 * last `"usage"` key, within the tail, opens an object (embeddings/raw.ts), and vectors cannot
 * hold a quote, so the byte search finds the real key. Returns the body unchanged if the layout is
 * not the expected one.
 */
export function withUsageCost(raw: Buffer, micros: Micros): Buffer {
  const at = raw.lastIndexOf(USAGE_KEY);
  if (at < 0 || at < raw.length - TAIL_BYTES) return raw;
  let i = skipSpace(raw, at + USAGE_KEY.length);
  if (raw[i] !== 0x3a /* : */) return raw;
  i = skipSpace(raw, i + 1);
  if (raw[i] !== 0x7b /* { */) return raw;
  const empty = raw[skipSpace(raw, i + 1)] === 0x7d; /* } */
  const member = Buffer.from(`"cost":${JSON.stringify(costUnits(micros))}${empty ? '' : ','}`);
  return Buffer.concat([raw.subarray(0, i + 1), member, raw.subarray(i + 1)]);
}
