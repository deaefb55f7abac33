import { CliError, EXIT } from '../exit.js';
import type { ApiClient } from './api.js';
import { printable } from '../text.js';
import { jobProgress, type JobProgress } from './progress.js';
import { sleep } from './timing.js';

export interface VideoJob {
  id: string;
  status: string;
  model?: string;
  seconds?: number;
  progress?: number;
  error?: { code?: string; message?: string };
  [k: string]: unknown;
}

export const videoPath = (id: string) => `/v1/videos/${encodeURIComponent(id)}`;

/**
 * Polls a job until it settles, every `pollMs` (5 s by default, as the spec asks); the API client
 * already backs off on 429/503. Answers the settled job; a job left processing past `maxWaitMs` is
 * an error (exit 1) that names the id so the caller can keep polling it later.
 */
export async function waitForJob(api: ApiClient, job: VideoJob, opts: { pollMs: number; maxWaitMs?: number; progress?: JobProgress }): Promise<VideoJob> {
  const progress = opts.progress ?? jobProgress();
  const deadline = Date.now() + (opts.maxWaitMs ?? 60 * 60_000);
  let current = job;
  try {
    progress.update(current.status, current.progress);
    while (current.status !== 'completed' && current.status !== 'failed') {
      if (Date.now() > deadline) throw new CliError(`gave up waiting; the job is still ${current.status}: ${job.id}`, EXIT.failure);
      await sleep(opts.pollMs);
      current = await api.json<VideoJob>('GET', videoPath(job.id));
      progress.update(current.status, typeof current.progress === 'number' ? current.progress : undefined);
    }
  } finally {
    progress.stop();
  }
  return current;
}

/** The documented failure of a settled job: exit 5 with the job's own code and message. */
export function failedJobError(job: VideoJob): CliError {
  const code = job.error?.code ?? 'generation_failed';
  return new CliError(`video job failed: ${printable(code)}: ${printable(job.error?.message ?? 'no message')}`, EXIT.jobFailed);
}
