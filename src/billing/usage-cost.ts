import { MICROS_PER_UNIT, type Micros } from '../core/money.js';

/**
 * `usage.cost` on answers: what the request cost, in currency units (the unit prices are configured
 * in), as a JSON number. Micros are whole numbers, so the value has at most six decimals.
 */
export function costUnits(micros: Micros): number {
  return micros / MICROS_PER_UNIT;
}

/**
 * `"cost":<units>,` to put first in a forwarded answer's `usage` object (embeddings/raw.ts
 * `forwardedBody` splices it in together with the model name, in one copy of the answer; the
 * forwarding path has checked that the object holds `prompt_tokens`, so a comma always follows).
 */
export function usageCostMember(micros: Micros): Buffer {
  return Buffer.from(`"cost":${JSON.stringify(costUnits(micros))},`);
}
