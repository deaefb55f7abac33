import { keyMayUseModel } from '../auth/authorize.js';
import type { AuthContext } from '../auth/types.js';
import { errors } from '../core/errors.js';
import { isObject, type JsonObject } from '../core/json.js';
import type { JobRecord } from '../store/job-types.js';
import type { VideoDeps } from './deps.js';
import { parseJobFilter, type JobFilterQuery } from './list-filter.js';
import { jobUpstream } from './job-upstream.js';
import { taskRefOf } from './refresh.js';
import { boundedAnswer } from './vendors/answers.js';
import { thumbnailBlob } from './thumbnail.js';
import { releaseHold } from './release.js';

export const LIST_DEFAULT_LIMIT = 20;
export const LIST_MAX_LIMIT = 100;

export interface ListQuery extends JobFilterQuery {
  after?: string;
  limit?: string;
  order?: string;
}

/**
 * One page of the account's jobs (those of the key's models). The cursor is a job's public id: the page starts right after
 * that job's (created_at, id), so jobs arriving meanwhile never shift or repeat a page.
 */
export async function listJobs(deps: VideoDeps, ctx: AuthContext, q: ListQuery): Promise<{ jobs: JobRecord[]; hasMore: boolean }> {
  const order = q.order ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw errors.invalidRequest("'order' must be 'asc' or 'desc'.", 'order');
  const limit = q.limit === undefined ? LIST_DEFAULT_LIMIT : Number(q.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > LIST_MAX_LIMIT)
    throw errors.invalidRequest(`'limit' must be an integer from 1 to ${LIST_MAX_LIMIT}.`, 'limit');
  const filter = parseJobFilter(q);
  let after: { createdAt: number; id: string } | undefined;
  if (q.after !== undefined && q.after !== '') {
    const claims = deps.sealer.open(q.after);
    const job = claims && claims.a === ctx.account.id ? await deps.store.getJob(claims.j) : undefined;
    // A deleted job still marks its place, so a client paging while deleting keeps its position.
    if (!job || job.accountId !== ctx.account.id || !keyMayUseModel(ctx.key, job.model)) throw errors.invalidRequest("'after' is not the id of one of your videos.", 'after', 'invalid_cursor');
    after = { createdAt: job.createdAt, id: job.id };
  }
  // A key limited to some models lists only its account's jobs of those models (as it reads only those).
  const modelPatterns = ctx.key.models.includes('*') ? undefined : ctx.key.models;
  const rows = await deps.store.listJobs(ctx.account.id, { ...filter, modelPatterns, after, limit: limit + 1, order });
  return { jobs: rows.slice(0, limit), hasMore: rows.length > limit };
}

/** Whether a cancel call can be sent for the job's task: its vendor has one, and the task and its upstream are known. */
export function mayCancelUpstream(deps: VideoDeps, job: JobRecord): boolean {
  return Boolean(deps.vendors.get(job.vendor)?.buildCancel && job.taskId && jobUpstream(deps, job));
}

/**
 * Stops a processing job upstream where the vendor has a cancel call. A 2xx means no video will
 * be made: the job fails as `cancelled` and its hold is released. Anything else (no such call, a
 * refusal because the task already runs, a transport error) leaves the job to settle as the
 * vendor decides: billed only if the vendor still reports the video as generated.
 */
export async function cancelUpstream(deps: VideoDeps, job: JobRecord): Promise<boolean> {
  if (!mayCancelUpstream(deps, job)) return false;
  const vendor = deps.vendors.get(job.vendor)!;
  const up = jobUpstream(deps, job)!;
  try {
    const res = await deps.client.send(up, vendor, boundedAnswer(vendor.buildCancel!(taskRefOf(job), up)));
    if (res.status < 200 || res.status >= 300) {
      deps.log.info({ job: job.id, status: res.status }, 'upstream refused to cancel; the job settles as the vendor decides');
      return false;
    }
  } catch (e) {
    deps.log.warn({ job: job.id, err: (e as Error).message }, 'upstream cancel failed; the job settles as the vendor decides');
    return false;
  }
  return releaseHold(deps, job.accountId, job.holdMicros, () =>
    deps.store.failJob(job.id, {
      code: 'cancelled',
      message: 'The job was cancelled by the client before it finished; nothing was charged.',
      vendorData: job.vendorData,
      now: deps.clock.now(),
    }),
  );
}

/** Removes what the gateway keeps for a job: its uploads, and once deleted its stored outputs. */
export async function purgeJob(deps: VideoDeps, job: JobRecord): Promise<void> {
  const names = [...job.uploads];
  if (job.deletedAt !== null) {
    for (const out of job.outputs) if (isObject(out) && typeof out.blob === 'string') names.push(out.blob);
    names.push(thumbnailBlob(job.id));
  }
  for (const name of names) await deps.blobs.delete(name);
  await deps.store.markPurged(job.id);
}

/** Purges every job that is due (run by the background refresher); failures are retried next time. */
export async function purgeDue(deps: VideoDeps, batch: number): Promise<number> {
  const due = await deps.store.duePurges(deps.clock.now(), batch);
  for (const job of due) {
    try {
      await purgeJob(deps, job);
    } catch (e) {
      deps.log.warn({ job: job.id, err: (e as Error).message }, 'purge failed; will retry');
    }
  }
  return due.length;
}

export function deletedAnswer(id: string): JsonObject {
  return { id, object: 'video.deleted', deleted: true };
}
