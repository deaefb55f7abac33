import type { OutboxBacklog, Store } from '../store/types.js';
import { SharedFlights } from '../core/shared-flights.js';
import { SharedRead } from './shared-read.js';

/**
 * Where the pending-deliveries gauge stops counting: past it, a scrape would read that many more
 * index entries for a figure that says no more than "far too many". The gauge then reads exactly
 * this number (it saturates); below it, it is exact. The jobs-by-state gauge stops at it too.
 */
export const BACKLOG_COUNT_CAP = 100_000;

/** How long one read of the backlog answers every scrape that asks (ms). */
export const BACKLOG_SHARED_MS = 2_000;

/** The job states the gauge always reports (0 included), so a state that empties shows as 0, not stale. */
export const JOB_STATES: readonly string[] = ['submitting', 'processing', 'completed', 'failed', 'rejected'];

const backlogs = new SharedRead<OutboxBacklog>(BACKLOG_SHARED_MS);
// Job counts are shared only while a read runs (for 10 s at most): a job's state change shows on the next scrape.
const jobCounts = new SharedFlights<object, Record<string, number>>(10_000);

/** The outbox backlog for a scrape, read at most once per BACKLOG_SHARED_MS per store (see SharedRead). */
export function sharedBacklog(store: Pick<Store, 'outboxBacklog'>, now: () => number = () => performance.now()): Promise<OutboxBacklog> {
  return backlogs.get(store, () => store.outboxBacklog(BACKLOG_COUNT_CAP), now());
}

/** Jobs per state for a scrape, each count capped at BACKLOG_COUNT_CAP; scrapes arriving during a read share it. */
export function sharedJobCounts(store: Pick<Store, 'countJobsByState'>, now: () => number = () => performance.now()): Promise<Record<string, number>> {
  return jobCounts.join(store, now(), () => store.countJobsByState(JOB_STATES, BACKLOG_COUNT_CAP));
}
