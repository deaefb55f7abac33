import { errors } from '../core/errors.js';
import type { JobListFilter } from '../store/types.js';

const DAY_MS = 86_400_000;

export interface JobFilterQuery {
  status?: string;
  model?: string;
  from?: string;
  to?: string;
}

/** `YYYY-MM-DD` (a UTC day; as `to` the whole day is included) or an ISO 8601 timestamp, to Unix ms. */
function parseTime(v: string | undefined, param: 'from' | 'to'): number | undefined {
  if (v === undefined || v === '') return undefined;
  const day = /^\d{4}-\d{2}-\d{2}$/.test(v);
  const t = day ? Date.parse(`${v}T00:00:00Z`) : /^\d{4}-\d{2}-\d{2}T/.test(v) ? Date.parse(v) : NaN;
  if (!Number.isFinite(t)) throw errors.invalidRequest(`'${param}' must be a date (YYYY-MM-DD) or an ISO 8601 timestamp.`, param);
  return day && param === 'to' ? t + DAY_MS : t;
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
  out.from = parseTime(q.from, 'from');
  out.to = parseTime(q.to, 'to');
  if (out.from !== undefined && out.to !== undefined && out.to <= out.from) throw errors.invalidRequest("'to' must be after 'from'.", 'to');
  return out;
}
