import { costUnits } from '../billing/usage-cost.js';
import type { JsonObject } from '../core/json.js';
import type { JobRecord } from '../store/job-types.js';

/**
 * The public job object (spec 2.1). Decisions the spec leaves open:
 * - timestamps are integer Unix seconds;
 * - always: id, object, status, model, seconds, created_at, vendor_data;
 * - completed: completed_at, output_url, seconds = the actual duration, usage (the vendor's token
 *   counts when it reports them; omitted when it reports none);
 * - failed: completed_at (when it failed) and error {code, message};
 * - `progress` (a whole number, 0-100) while processing when the vendor reports one.
 * - money, in currency units: `usage.held` while processing (the estimate held from the balance),
 *   `usage.cost` once settled (what the ledger captured; 0 for a failed job).
 * - vendor_data: at most 64 KiB of JSON; a larger one is cut to whole fields and marked
 *   `vendor_data_truncated` (core/vendor-data.ts). Polls store it bounded, and a row stored before
 *   that is bounded when it is read (store/rows.ts), so nothing is walked here.
 */
export function presentJob(job: JobRecord, outputUrl: string | undefined): JsonObject {
  const status = job.state === 'completed' ? 'completed' : job.state === 'failed' ? 'failed' : 'processing';
  const out: JsonObject = {
    id: job.publicId ?? '',
    object: 'video',
    status,
    model: job.model,
    seconds: status === 'completed' && job.seconds !== null ? job.seconds : job.estSeconds,
    created_at: Math.floor(job.createdAt / 1000),
  };
  // The vendor's figure, shown as the OpenAI surface shows it: a whole percentage in 0-100.
  if (status === 'processing' && job.progress !== null && Number.isFinite(job.progress)) out.progress = Math.max(0, Math.min(100, Math.round(job.progress)));
  if (status !== 'processing' && job.completedAt !== null) out.completed_at = Math.floor(job.completedAt / 1000);
  if (status === 'completed') {
    if (outputUrl) out.output_url = outputUrl;
    out.usage = { ...(job.usage ?? {}), cost: costUnits(job.costMicros ?? 0) };
  }
  if (status === 'processing') out.usage = { held: costUnits(job.holdMicros) };
  if (status === 'failed') out.usage = { cost: 0 };
  if (status === 'failed') out.error = { code: job.errorCode ?? 'generation_failed', message: job.errorMessage ?? 'The generation failed.' };
  out.vendor_data = job.vendorData;
  return out;
}
