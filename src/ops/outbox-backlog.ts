import type { OutboxBacklog, Store } from '../store/types.js';

/**
 * Where the pending-deliveries gauge stops counting: past it, a scrape would read that many more
 * index entries for a figure that says no more than "far too many". The gauge then reads exactly
 * this number (it saturates); below it, it is exact.
 */
export const BACKLOG_COUNT_CAP = 100_000;

/** How long one read of the backlog answers every scrape that asks (ms). */
export const BACKLOG_SHARED_MS = 2_000;

type BacklogSource = Pick<Store, 'outboxBacklog'>;

const lastReads = new WeakMap<BacklogSource, { at: number; read: Promise<OutboxBacklog> }>();

/**
 * The outbox backlog for a scrape, read at most once per BACKLOG_SHARED_MS per store: scrapes that
 * arrive together (several Prometheus servers, or a scrape on each listener) share one read, and
 * one still running is joined rather than repeated. A failed read is not kept.
 */
export function sharedBacklog(store: BacklogSource, now: () => number = () => performance.now()): Promise<OutboxBacklog> {
  const at = now();
  const last = lastReads.get(store);
  if (last && at - last.at < BACKLOG_SHARED_MS) return last.read;
  const read = store.outboxBacklog(BACKLOG_COUNT_CAP);
  lastReads.set(store, { at, read });
  read.catch(() => {
    if (lastReads.get(store)?.read === read) lastReads.delete(store);
  });
  return read;
}
