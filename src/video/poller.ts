import { moneyReleased, units, videoSettlements } from '../ops/metrics.js';
import { purgeDue } from './manage.js';
import type { VideoService } from './service.js';
import { releaseHold } from './release.js';

/** Expired Idempotency-Key records removed per pass (a pass every video.refresher_interval_ms, 2 s by default). */
const IDEMPOTENCY_PRUNE_BATCH = 500;

/**
 * Background refresher: settles jobs nobody polls. Each tick takes due jobs, wins their poll
 * lease (so several gateway instances never poll one job at once) and refreshes them; jobs past
 * their deadline are failed at no charge by the same path.
 */
export class VideoPoller {
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(
    private readonly video: VideoService,
    private readonly intervalMs: number,
    private readonly staleSubmittingMs = 15 * 60 * 1000,
    private readonly batch = 25,
  ) {}

  start(): void {
    if (this.intervalMs <= 0 || this.timer) return;
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    while (this.running) await new Promise((r) => setTimeout(r, 10));
  }

  /**
   * A create in flight takes at most the upstream timeouts of its candidates; a row still
   * 'submitting' long after that belongs to a process that died mid-create. Its hold is released
   * and the job is recorded, since the upstream may have started a task nobody tracks.
   */
  private async rejectStale(now: number): Promise<void> {
    const { store, log } = this.video.deps;
    for (const job of await store.staleSubmittingJobs(now - this.staleSubmittingMs, this.batch)) {
      // Another instance may have released it first: the money moved once, so it is counted once,
      // and recorded once (the record commits with the release that won).
      const reason = 'gateway stopped during create';
      if (!(await releaseHold(this.video.deps, job.accountId, job.holdMicros, () => store.rejectJob(job.id, reason, now, reason)))) continue;
      videoSettlements.inc({ model: job.model, outcome: 'rejected', code: 'interrupted' });
      moneyReleased.inc({ model: job.model }, units(job.holdMicros));
      log.warn({ job: job.id }, 'released the hold of a create interrupted by a restart');
    }
  }

  /** One pass; exposed for tests and for a manual nudge. */
  async tick(): Promise<number> {
    if (this.running) return 0;
    this.running = true;
    try {
      const { store, clock } = this.video.deps;
      const now = clock.now();
      await this.rejectStale(now);
      const jobs = [...(await store.overdueJobs(now, this.batch)), ...(await store.dueJobs(now, this.batch))];
      const seen = new Set<string>();
      await Promise.all(
        jobs.filter((j) => !seen.has(j.id) && seen.add(j.id)).map((j) => this.video.refresh(j)),
      );
      // Uploads past their retention, and what deleted jobs left behind.
      await purgeDue(this.video.deps, this.batch);
      await this.video.deps.files.purgeExpired(this.batch);
      // Idempotency-Keys past their day: a bounded batch per pass.
      await store.pruneIdempotencyKeys(now, IDEMPOTENCY_PRUNE_BATCH);
      return seen.size;
    } catch (e) {
      this.video.deps.log.error({ err: (e as Error).message }, 'video poller tick failed');
      return 0;
    } finally {
      this.running = false;
    }
  }
}
