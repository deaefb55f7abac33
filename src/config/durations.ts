import { z } from 'zod';

/** The longest delay Node's timers take (2^31 - 1 ms, about 24.8 days). */
export const TIMER_MAX_MS = 2_147_483_647;

/** Ten years: the longest span a date-only setting (a retention, a link's lifetime) may add to the clock. */
export const SPAN_MAX_MS = 3650 * 86_400_000;

/**
 * A duration that reaches a timer (setTimeout, setInterval, AbortSignal.timeout), or may one day.
 * Node runs a longer timer after 1 ms, with nothing but a warning: an interval of "a very long time"
 * would scan the database every millisecond and a shutdown deadline of "as long as it takes" would
 * exit at once. Refused at load (and by `gateway check`) instead.
 */
export function timerMs() {
  return z
    .number()
    .int()
    .max(TIMER_MAX_MS, `must be at most ${TIMER_MAX_MS} ms (about 24.8 days): Node fires a longer timer after 1 ms instead`);
}

/**
 * A duration only ever added to a clock reading to make a stored date (never a timer), so it may
 * reach past TIMER_MAX_MS (files are kept 30 days by default); bounded so that the date stays sane.
 */
export function spanMs() {
  return z.number().int().max(SPAN_MAX_MS, `must be at most ${SPAN_MAX_MS} ms (ten years)`);
}
