import { formatMicros } from '../core/money.js';
import { errors } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import type { JobRecord } from '../store/job-types.js';
import { parseJobFilter, type JobFilterQuery } from '../video/list-filter.js';
import { LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT } from '../video/manage.js';
import { presentJob } from '../video/present.js';
import type { VideoService } from '../video/service.js';
import type { AdminService } from './service.js';

export interface AdminJobQuery extends JobFilterQuery {
  account?: string;
  after?: string;
  limit?: string;
}

/**
 * Jobs as the operator sees them: the spec's job object (with its signed output_url, which plays in
 * a browser without a key), plus whose it is, where it ran and what it held and cost.
 */
export function adminJobView(video: VideoService, job: JobRecord): JsonObject {
  const url = job.state === 'completed' && job.publicId ? video.outputUrl(job.publicId) : undefined;
  return {
    ...presentJob(job, url),
    account_id: job.accountId,
    key_id: job.keyId,
    upstream: job.upstream,
    dialect: job.dialect,
    request_id: job.requestId,
    hold: formatMicros(job.holdMicros),
    cost: job.costMicros === null ? null : formatMicros(job.costMicros),
    updated_at: Math.floor(job.updatedAt / 1000),
    ...(job.remixedFrom ? { remixed_from: job.remixedFrom } : {}),
  };
}

/** A job by its public id, whichever account it belongs to (the sealed id names the account). */
async function jobByPublicId(video: VideoService, id: string): Promise<JobRecord | undefined> {
  const claims = video.deps.sealer.open(id);
  const job = claims ? await video.deps.store.getJob(claims.j) : undefined;
  return job && job.accountId === claims!.a ? job : undefined;
}

export async function adminGetJob(video: VideoService, id: string): Promise<JsonObject> {
  const job = await jobByPublicId(video, id);
  if (!job || job.state === 'submitting' || job.state === 'rejected' || job.deletedAt !== null)
    throw errors.notFound(`No video with id '${id.slice(0, 200)}'.`, 'video_not_found');
  return adminJobView(video, job);
}

/** GET /admin/jobs: every account's jobs (or one account's), newest first, filtered, in cursor pages. */
export async function adminListJobs(video: VideoService, admin: AdminService, q: AdminJobQuery): Promise<JsonObject> {
  const limit = q.limit === undefined ? LIST_DEFAULT_LIMIT : Number(q.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > LIST_MAX_LIMIT)
    throw errors.invalidRequest(`'limit' must be an integer from 1 to ${LIST_MAX_LIMIT}.`, 'limit');
  const filter = parseJobFilter(q);
  const accountId = q.account ? (await admin.account(q.account)).id : undefined;
  let after: { createdAt: number; id: string } | undefined;
  if (q.after !== undefined && q.after !== '') {
    const job = await jobByPublicId(video, q.after);
    if (!job) throw errors.invalidRequest("'after' is not the id of a video.", 'after', 'invalid_cursor');
    after = { createdAt: job.createdAt, id: job.id };
  }
  const rows = await video.deps.store.listJobs(accountId, { ...filter, after, limit: limit + 1, order: 'desc' });
  const jobs = rows.slice(0, limit);
  return {
    object: 'list',
    data: jobs.map((j) => adminJobView(video, j)),
    first_id: jobs[0]?.publicId ?? null,
    last_id: jobs[jobs.length - 1]?.publicId ?? null,
    has_more: rows.length > limit,
  };
}
