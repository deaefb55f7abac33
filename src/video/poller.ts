import type { VideoService } from './service.js';

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

  /** One pass; exposed for tests and for a manual nudge. */
  async tick(): Promise<number> {
    if (this.running) return 0;
    this.running = true;
    try {
      const { store, clock } = this.video.deps;
      const now = clock.now();
      const jobs = [...(await store.overdueJobs(now, this.batch)), ...(await store.dueJobs(now, this.batch))];
      const seen = new Set<string>();
      await Promise.all(
        jobs.filter((j) => !seen.has(j.id) && seen.add(j.id)).map((j) => this.video.refresh(j)),
      );
      return seen.size;
    } catch (e) {
      this.video.deps.log.error({ err: (e as Error).message }, 'video poller tick failed');
      return 0;
    } finally {
      this.running = false;
    }
  }
}
