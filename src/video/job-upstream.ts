import type { Upstream } from '../http/types.js';
import type { JobRecord } from '../store/job-types.js';
import type { VideoDeps } from './deps.js';

/**
 * The upstream a job is pinned to, as the running config has it: undefined when the name is gone,
 * and also when a restart gave the name to an upstream of another vendor. The task is the first
 * vendor's: sent to the other one in the first vendor's protocol, its 404 would read as the task
 * having expired (and a poll, a download or a cancel would go to a service that never had it).
 */
export function jobUpstream(deps: Pick<VideoDeps, 'catalog'>, job: Pick<JobRecord, 'upstream' | 'vendor'>): Upstream | undefined {
  const up = job.upstream ? deps.catalog.upstream(job.upstream) : undefined;
  return up?.vendor === job.vendor ? up : undefined;
}
