import type { HoldOutcome } from '../billing/reservations.js';
import { errors } from '../core/errors.js';
import { isObject, type JsonObject } from '../core/json.js';
import type { Micros } from '../core/money.js';
import { moneyHeld, units } from '../ops/metrics.js';
import type { NewJob } from '../store/job-types.js';
import type { VideoDeps } from './deps.js';

/**
 * Writes the job with its hold (one store transaction: the key's budget, the balance, the ledger
 * entry, the row), through this process's in-flight accounting when there is one
 * (billing/reservations.ts `storeHold`). A hold that does not fit is a 402 naming the balance or
 * the key's budget.
 */
export async function placeJob(deps: Pick<VideoDeps, 'reservations' | 'store'>, job: NewJob, hold: Micros, now: number): Promise<void> {
  const placed = deps.reservations
    ? await deps.reservations.storeHold(job.accountId, hold, (inFlight) => deps.store.createJobWithHold(job, hold, now, inFlight), holdOutcome)
    : await deps.store.createJobWithHold(job, hold, now);
  if (placed === 'insufficient') throw errors.insufficientQuota(`This video needs a balance of at least ${hold / 1e6} to start, besides what the account's requests still running hold.`);
  if (placed === 'key_lost') throw errors.idempotencyKeyInUse('Another request took over this Idempotency-Key while this one was being processed; nothing was held.');
  if (placed === 'key_budget') throw errors.keyBudgetExceeded(`This video holds ${hold / 1e6} while it runs, more than the API key's budget has left.`);
  moneyHeld.inc({ model: job.model }, units(hold));
}

/** A refusal for the balance may rest on a charge counted twice and is tried again (billing/reservations.ts); one for the key's budget, or for a key taken over, is final. */
function holdOutcome(placed: 'ok' | 'insufficient' | 'key_budget' | 'key_lost'): HoldOutcome {
  return placed === 'ok' ? 'taken' : placed === 'insufficient' ? 'short' : 'refused';
}

/** What is kept of the request: standard fields and native names, prompt truncated, no media bytes. */
export function summarize(body: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(body)) {
    if (k === 'prompt' && typeof v === 'string') out.prompt = v.slice(0, 500);
    else if (typeof v === 'string') out[k] = v.length > 300 ? `${v.slice(0, 300)}...` : v;
    else if (typeof v === 'number' || typeof v === 'boolean' || v === null) out[k] = v;
    else out[k] = Array.isArray(v) ? `[array of ${v.length}]` : isObject(v) ? '[object]' : null;
  }
  return out;
}
