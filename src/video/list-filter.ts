import { errors } from '../core/errors.js';
import { queryTime } from '../core/query-time.js';
import type { JobListFilter } from '../store/job-types.js';

export interface JobFilterQuery {
  status?: string;
  model?: string;
  from?: string;
  to?: string;
}

/**
 * The job list's filters, shared by GET /v1/videos and GET /admin/jobs. `status` takes the spec's
 * words, and OpenAI's `queued`/`in_progress` as processing (a job the vendor has not finished).
 */
export function parseJobFilter(q: JobFilterQuery): Pick<JobListFilter, 'state' | 'model' | 'from' | 'to'> {
  const out: Pick<JobListFilter, 'state' | 'model' | 'from' | 'to'> = {};
  if (q.status !== undefined && q.status !== '') {
    const s = q.status === 'queued' || q.status === 'in_progress' ? 'processing' : q.status;
    if (s !== 'processing' && s !== 'completed' && s !== 'failed')
      throw errors.invalidRequest("'status' must be processing, completed or failed.", 'status');
    out.state = s;
  }
  if (q.model !== undefined && q.model !== '') {
    if (q.model.length > 200) throw errors.invalidRequest("'model' is too long.", 'model');
    out.model = q.model;
  }
  out.from = queryTime(q.from, 'from');
  out.to = queryTime(q.to, 'to', true);
  if (out.from !== undefined && out.to !== undefined && out.to <= out.from) throw errors.invalidRequest("'to' must be after 'from'.", 'to');
  return out;
}
