import { errors } from '../core/errors.js';
import type { JobRecord } from '../store/job-types.js';

/** The first wait before trying the lease again; each further wait doubles, up to MAX_RETRY_MS. */
const FIRST_RETRY_MS = 25;
const MAX_RETRY_MS = 250;
/** The wait lasts as long as another caller's lease can (plus this, for the clocks of two instances)... */
const LEASE_SLACK_MS = 500;
/** ...but never longer than this: a client's DELETE is not held for a whole 30 s lease. */
const MAX_WAIT_MS = 15_000;

/**
 * Why a delete waits before it cancels: another request (or instance) may hold the job's poll lease
 * with its vendor call in flight. Cancelling on the row as it stands could remove a task that finished
 * during that poll, for free (Ark's and Azure's DELETE also remove a finished task with a 2xx). So the
 * delete tries the lease until it wins it, then asks the vendor itself; the other poll hands the lease
 * back when it ends (or the lease runs out if its process died). Tries back off from 25 to 250 ms, so a
 * wait costs a few dozen statements, not one every tick. A lease held past the bound is a 503 to retry,
 * never a cancel on stale knowledge.
 *
 * `pollOnce` tries the lease and, when it wins, refreshes the job from its vendor (`polled`).
 */
export async function untilPolledByUs(
  job: JobRecord,
  leaseMs: number,
  pollOnce: (job: JobRecord) => Promise<{ job: JobRecord; polled: boolean }>,
): Promise<JobRecord> {
  const waitUntil = performance.now() + Math.min(leaseMs + LEASE_SLACK_MS, MAX_WAIT_MS);
  for (let wait = FIRST_RETRY_MS; ; wait = Math.min(MAX_RETRY_MS, wait * 2)) {
    const out = await pollOnce(job);
    if (out.polled || out.job.state !== 'processing') return out.job;
    const left = waitUntil - performance.now();
    if (left <= 0) throw errors.jobBusy();
    await new Promise((r) => setTimeout(r, Math.min(wait, left)));
    job = out.job;
  }
}
