import type { JsonObject } from '../../core/json.js';
import type { JobRecord } from '../../store/job-types.js';
import type { VideoCapabilities } from '../capabilities.js';

/** Without a vendor figure, progress is read off the clock against a typical generation time, and never reaches 100 early. */
const TYPICAL_GENERATION_MS = 120_000;
const DERIVED_PROGRESS_CAP = 95;

export type OpenAiStatus = 'queued' | 'in_progress' | 'completed' | 'failed';

/**
 * The job's status in OpenAI's words: a processing job is `queued` until the vendor says it runs
 * (or, for vendors that never say, until the first poll finds it still going), then `in_progress`.
 */
export function openAiStatus(job: JobRecord): OpenAiStatus {
  if (job.state === 'completed') return 'completed';
  if (job.state === 'failed') return 'failed';
  return job.phase === 'running' ? 'in_progress' : 'queued';
}

function progressOf(job: JobRecord, status: OpenAiStatus, now: number): number {
  if (status === 'completed') return 100;
  if (job.progress !== null) return Math.max(0, Math.min(100, Math.round(job.progress)));
  if (status !== 'in_progress') return 0;
  return Math.min(DERIVED_PROGRESS_CAP, Math.floor(((now - job.createdAt) / TYPICAL_GENERATION_MS) * 100));
}

const seconds = (s: number) => String(Math.round(s * 1000) / 1000);

/**
 * A job created through POST /v1/videos, in the shape of OpenAI's video object: every field the
 * official SDKs read is present (null where OpenAI puts null), `seconds` and `size` are strings,
 * timestamps are Unix seconds, and everything else the vendor said is under `vendor_data`.
 */
export function presentOpenAiVideo(job: JobRecord, caps: VideoCapabilities | undefined, now: number): JsonObject {
  const status = openAiStatus(job);
  const completedAt = status === 'completed' || status === 'failed' ? job.completedAt : null;
  const ttl = caps?.content_ttl_seconds ?? null;
  const size = typeof job.request.size === 'string' ? job.request.size : (caps?.default_size ?? null);
  return {
    id: job.publicId ?? '',
    object: 'video',
    model: job.model,
    status,
    progress: progressOf(job, status, now),
    created_at: Math.floor(job.createdAt / 1000),
    completed_at: completedAt !== null ? Math.floor(completedAt / 1000) : null,
    expires_at: status === 'completed' && completedAt !== null && ttl !== null ? Math.floor(completedAt / 1000) + ttl : null,
    error: status === 'failed' ? { code: job.errorCode ?? 'generation_failed', message: job.errorMessage ?? 'The generation failed.' } : null,
    prompt: typeof job.request.prompt === 'string' ? job.request.prompt : null,
    remixed_from_video_id: job.remixedFrom,
    seconds: seconds(status === 'completed' && job.seconds !== null ? job.seconds : job.estSeconds),
    size,
    vendor_data: job.vendorData,
  };
}
