import type { Clock } from '../core/clock.js';
import { RecentKeys } from '../core/recent-keys.js';
import type { Store } from '../store/types.js';
import type { JobRecord } from '../store/job-types.js';

const PROCESSING_TTL_MS = 1_000;
// A settled row changes only when the job is deleted; another instance's delete shows here within this.
const SETTLED_TTL_MS = 1_000;
// Rows carry vendor payloads: keep the cache small (it only has to cover the hot set).
const MAX_ENTRIES = 2_000;
// A row polled this long after its read is read again in the background, before it runs out.
const REREAD_AFTER_MS = 750;

/** Times of entries and reads are on the monotonic clock (`elapsed`), never the wall clock. */
interface Entry {
  job: JobRecord;
  /** When the read that produced it started. */
  at: number;
  /** Not used from this time on. */
  until: number;
}

/** A store read under way; `forget` drops it, so a read begun before a change is not kept. */
interface Read {
  promise: Promise<JobRecord | undefined>;
  /** Its row is kept: the job is hot (read again within the second), or another poll joined the read. */
  keep: boolean;
}

/**
 * Job rows for polls. A row is reused for at most a second: a processing row until its next poll time
 * at the latest, a settled one because a delete on another instance must show (this instance forgets
 * a row whenever it refreshes or deletes the job itself, so only another instance's settlement or
 * delete can be up to a second late; clients poll every 5-10 s).
 * Reading and decoding the row is most of a poll's cost. On a networked database, a read is also a
 * wait, so: the polls that miss together share one read, and a row near the end of its second is
 * read again in the background while polls go on with it (the staleness bound stays the same), so
 * under steady polling no poll waits for the database.
 * A row is kept only for a hot job: one read before within the second (`RecentKeys`), or polled by
 * more than one poll at once. A job polled every few seconds (most) would never be served from the
 * cache, and keeping its row anyway cost more than the read it never saves: under polls of many jobs
 * each kept row outlived two young collections and was copied into the old generation
 * (bench/README.md, "A poll that misses every cache").
 */
export class JobCache {
  private readonly rows = new Map<string, Entry>();
  private readonly reading = new Map<string, Read>();
  /** Job ids read within the last PROCESSING_TTL_MS: those are hot. */
  private readonly recent = new RecentKeys(PROCESSING_TTL_MS);

  /**
   * `clock` is the wall clock (a job's next poll time is one); `elapsed` a monotonic one that bounds
   * how long a row is used: a wall clock set back must not keep serving a row past its second.
   */
  constructor(
    private readonly store: Pick<Store, 'getJob'>,
    private readonly clock: Clock,
    private readonly elapsed: () => number = () => performance.now(),
  ) {}

  async get(id: string): Promise<JobRecord | undefined> {
    const now = this.elapsed();
    const hit = this.rows.get(id);
    if (hit && now < hit.until) {
      if (now - hit.at >= REREAD_AFTER_MS && !this.reading.has(id)) this.read(id, now, true).promise.catch(() => undefined);
      return hit.job;
    }
    const shared = this.reading.get(id);
    if (shared) {
      shared.keep = true;
      return shared.promise;
    }
    return this.read(id, now, this.recent.seenAgain(id, now)).promise;
  }

  forget(id: string): void {
    this.rows.delete(id);
    this.reading.delete(id);
  }

  private read(id: string, now: number, keep: boolean): Read {
    const read: Read = { promise: this.readInto(id, now, () => read), keep };
    this.reading.set(id, read);
    return read;
  }

  private async readInto(id: string, now: number, self: () => Read): Promise<JobRecord | undefined> {
    try {
      const job = await this.store.getJob(id);
      if (job && this.reading.get(id) === self() && self().keep) this.keep(id, job, now);
      return job;
    } finally {
      if (this.reading.get(id) === self()) this.reading.delete(id);
    }
  }

  private keep(id: string, job: JobRecord, now: number): void {
    const settled = job.state === 'completed' || job.state === 'failed';
    // A processing row is not kept past its next poll time (wall clock), when it must be refreshed anyway.
    const life = settled ? SETTLED_TTL_MS : Math.min(PROCESSING_TTL_MS, job.nextPollAt - this.clock.now());
    if (!(life > 0)) return;
    const until = now + life;
    if (this.rows.size >= MAX_ENTRIES) this.rows.clear();
    this.rows.set(id, { job, at: now, until });
  }
}
