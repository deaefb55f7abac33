import type { Clock } from '../core/clock.js';
import type { JobRecord, Store } from '../store/types.js';

const PROCESSING_TTL_MS = 1_000;
// A settled row changes only when the job is deleted; another instance's delete shows here within this.
const SETTLED_TTL_MS = 1_000;
// Rows carry vendor payloads: keep the cache small (it only has to cover the hot set).
const MAX_ENTRIES = 2_000;

/**
 * Job rows for polls. A row is reused for at most a second: a processing row until its next poll time
 * at the latest, a settled one because a delete on another instance must show (this instance forgets
 * a row whenever it refreshes or deletes the job itself, so only another instance's settlement or
 * delete can be up to a second late; clients poll every 5-10 s).
 * Reading and decoding the row is most of a poll's cost.
 */
export class JobCache {
  private readonly rows = new Map<string, { job: JobRecord; until: number }>();

  constructor(
    private readonly store: Pick<Store, 'getJob'>,
    private readonly clock: Clock,
  ) {}

  async get(id: string): Promise<JobRecord | undefined> {
    const now = this.clock.now();
    const hit = this.rows.get(id);
    if (hit && now < hit.until) return hit.job;
    const job = await this.store.getJob(id);
    if (!job) return undefined;
    if (this.rows.size >= MAX_ENTRIES) this.rows.clear();
    const settled = job.state === 'completed' || job.state === 'failed';
    // A processing row is not kept past its next poll time, when it must be refreshed anyway.
    const until = settled ? now + SETTLED_TTL_MS : Math.min(now + PROCESSING_TTL_MS, Math.max(job.nextPollAt, now));
    if (until > now) this.rows.set(id, { job, until });
    return job;
  }

  forget(id: string): void {
    this.rows.delete(id);
  }
}
