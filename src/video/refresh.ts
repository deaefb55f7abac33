import { isGatewayError } from '../core/errors.js';
import { isObject, type JsonObject } from '../core/json.js';
import { costForSeconds } from '../core/money.js';
import { redactorFor } from '../core/redact.js';
import { TransportError, type Upstream, type UpstreamRequest, type UpstreamResponse } from '../http/types.js';
import { moneyCaptured, moneyReleased, units, videoSettlements } from '../ops/metrics.js';
import type { JobRecord } from '../store/job-types.js';
import type { VideoDeps } from './deps.js';
import { settleSeconds } from './duration.js';
import { videoMediaType } from './media-type.js';
import type { FailureCode, TaskRef, VendorStatus, VideoOutput, VideoVendor } from './types.js';
import { keptVendorData, pollAnswerBounds } from './vendors/answers.js';
import { releaseHold } from './release.js';
import { jobUpstream } from './job-upstream.js';
import { takeInlineVideos } from './inline-output.js';
import { restoredAnswer, withLiftedMedia } from './answer-media.js';
import { unreachableOutput } from './download-rules.js';
import { CHECKED_WHEN_STORED } from './stored-copy.js';

const FAILURE_CODES: ReadonlySet<string> = new Set<FailureCode>([
  'content_policy_violation', 'invalid_media', 'unsupported_parameters', 'generation_failed', 'cancelled', 'expired', 'timeout',
]);
const isFailureCode = (c: string | undefined): c is FailureCode => c !== undefined && FAILURE_CODES.has(c);

/** fal-style protocols need a second request (status, then result); more than this is a loop. */
const MAX_POLL_STEPS = 3;

/**
 * The task meta key holding the create answer's vendor_data (create.ts): the ground every poll's
 * vendor_data is laid over, so what only the create said stays visible. Not the adapters' to read.
 */
export const CREATED_VENDOR_DATA = 'createdVendorData';

export function taskRefOf(job: JobRecord): TaskRef {
  const { upstreamModel, [CREATED_VENDOR_DATA]: _created, ...meta } = job.taskMeta;
  return {
    taskId: job.taskId ?? '',
    model: job.model,
    upstreamModel: typeof upstreamModel === 'string' ? upstreamModel : job.model,
    meta,
  };
}

/**
 * Brings one processing job up to date with its upstream, settling it at most once. The caller
 * must hold the job's poll lease. Transport failures and retryable answers leave the job
 * processing (the hold stays; only a definitive failure or the deadline releases it). `stopping`
 * aborts the vendor poll at shutdown: the job is then handed back, due at once.
 */
export async function refreshJob(deps: VideoDeps, job: JobRecord, stopping?: AbortSignal): Promise<void> {
  const now = deps.clock.now();
  if (job.state !== 'processing') return;
  if (now >= job.deadlineAt) {
    const message = 'The job did not finish before the gateway deadline; nothing was charged.';
    await settleFailed(deps, job, { code: 'timeout', message }, job.vendorData, unsettledTask(deps, job));
    return;
  }
  const deferred = job.taskMeta.deferred_failure;
  if (deferred && typeof deferred === 'object' && !Array.isArray(deferred)) {
    await settleFailed(deps, job, { code: String(deferred.code), message: String(deferred.message) }, {});
    return;
  }
  const vendor = deps.vendors.get(job.vendor);
  const up = jobUpstream(deps, job);
  if (!vendor || !up) {
    deps.log.warn({ job: job.id, upstream: job.upstream }, 'job upstream is no longer configured; will retry');
    await backoff(deps, job, now);
    return;
  }
  let status: VendorStatus | undefined;
  try {
    status = await pollOnce(deps, vendor, up, taskRefOf(job), createdVendorData(job), stopping);
  } catch (e) {
    // No memory for a large answer (an inline video) right now: like a transport failure, try later.
    const shed = isGatewayError(e) && e.code === 'overloaded';
    if (!(e instanceof TransportError) && !shed) throw e;
    if (!stopping?.aborted) deps.log.warn({ job: job.id, upstream: up.name, reason: shed ? 'overloaded' : (e as TransportError).reason }, 'video poll failed; will retry');
  }
  if (!status && stopping?.aborted) {
    // Cut short by shutdown, not the vendor's doing: the lease goes back and the job is due at once,
    // for the next process or another instance, without a back-off.
    await deps.store.recordPoll(job.id, { vendorData: job.vendorData, progress: job.progress, nextPollAt: now, now });
    return;
  }
  if (!status) return backoff(deps, job, now);
  switch (status.state) {
    case 'processing':
      await deps.store.recordPoll(job.id, {
        vendorData: status.vendorData,
        progress: status.progress ?? null,
        phase: status.phase ?? 'running',
        nextPollAt: now + deps.settings.pollIntervalMs,
        now,
      });
      return;
    case 'failed':
      await settleFailed(deps, job, { code: status.code, message: status.message }, status.vendorData);
      return;
    case 'completed':
      await settleCompleted(deps, job, status, vendor, up);
      return;
  }
}

async function pollOnce(
  deps: VideoDeps,
  vendor: VideoVendor,
  up: Parameters<VideoVendor['buildPoll']>[1],
  task: TaskRef,
  fromCreate: JsonObject,
  signal: AbortSignal | undefined,
): Promise<VendorStatus | undefined> {
  let req: UpstreamRequest = vendor.buildPoll(task, up);
  // The create answer's fields first, then each step's: on the same key, the latest answer wins.
  let carried: JsonObject = fromCreate;
  for (let step = 0; step < MAX_POLL_STEPS; step++) {
    const res: UpstreamResponse = await sendPoll(deps, vendor, up, req, signal);
    const out = res.status < 200 || res.status >= 300 ? verdictToStatus(vendor, restoredAnswer(res)) : withLiftedMedia(vendor.parsePoll(res, task, up), res.media);
    if (out && 'next' in out) {
      req = out.next;
      carried = { ...carried, ...(out.vendorData ?? {}) };
      continue;
    }
    if (out && Object.keys(carried).length > 0) return storableStatus({ ...out, vendorData: { ...carried, ...out.vendorData } }, up);
    return out && storableStatus(out, up);
  }
  return undefined;
}

function createdVendorData(job: JobRecord): JsonObject {
  const data = job.taskMeta[CREATED_VENDOR_DATA];
  return isObject(data) ? data : {};
}

/**
 * One poll request, its answer bounded as the vendor's can legitimately be (vendors/answers.ts): a
 * larger answer is a transport failure like any other, and the job is polled again later (until its
 * deadline, which releases the hold at no charge). The executor reads either way with the process's
 * answer-memory budget and its JSON nesting bound.
 */
function sendPoll(deps: VideoDeps, vendor: VideoVendor, up: Upstream, req: UpstreamRequest, signal: AbortSignal | undefined): Promise<UpstreamResponse> {
  return deps.client.send(up, vendor, { ...req, ...pollAnswerBounds(vendor) }, signal);
}

/**
 * What a poll learnt is stored and shown to the client (message, vendor_data): never the upstream's
 * credentials, and never more vendor_data than its bound. Bounded before it is redacted, so that the
 * redaction only reads what is kept (vendors/answers.ts keptVendorData); the message likewise.
 */
function storableStatus(status: VendorStatus, up: Parameters<typeof redactorFor>[0]): VendorStatus {
  const r = redactorFor(up);
  const vendorData = keptVendorData(status.vendorData, (v) => r.json(v));
  return status.state === 'failed' ? { ...status, message: r.message(status.message), vendorData } : { ...status, vendorData };
}

/** A non-2xx poll answer: the caller's or content problems end the job; the rest is retried. */
function verdictToStatus(vendor: VideoVendor, res: UpstreamResponse): VendorStatus | undefined {
  const v = vendor.classifyError(res);
  const vendorData: JsonObject = res.json && typeof res.json === 'object' && !Array.isArray(res.json) ? (res.json as JsonObject) : {};
  if (v.kind === 'moderation') return { state: 'failed', code: 'content_policy_violation', message: v.message, vendorData };
  if (v.kind === 'client') {
    const code: FailureCode = isFailureCode(v.code) ? v.code : v.status === 404 ? 'expired' : 'generation_failed';
    return { state: 'failed', code, message: v.message, vendorData };
  }
  return undefined;
}

/**
 * A completed job is billed by the duration the vendor reported, bounded by what the job held
 * (duration.ts settleSeconds): never more than the hold, never below zero, and a figure that is no
 * duration at all settles the job at the held seconds instead of failing every poll. Any adjustment
 * is recorded for reconciliation with the vendor's own bill.
 */
async function settleCompleted(deps: VideoDeps, job: JobRecord, status: Extract<VendorStatus, { state: 'completed' }>, vendor: VideoVendor, up: Upstream): Promise<void> {
  if (status.outputs.length === 0) {
    // Completed without a video is no result to pay for.
    await settleFailed(deps, job, { code: 'generation_failed', message: 'The vendor reported the job finished but returned no video; nothing was charged.' }, status.vendorData);
    return;
  }
  // Checked before anything is kept or captured: an inline video that is no video is the vendor's failure.
  const inline = await takeInlineVideos(deps, job, status.outputs);
  if (!inline) {
    const message = 'The vendor reported the job finished but the video it returned is not a video file; nothing was charged.';
    await settleFailed(deps, job, { code: 'generation_failed', message }, status.vendorData);
    return;
  }
  // A video at a location no download will ever fetch from is no video either (download-rules.ts).
  const unreachable = unreachableOutput(deps, vendor, up, taskRefOf(job), status.outputs, inline);
  if (unreachable) {
    const { index: output, why, refused } = unreachable;
    deps.log.warn({ job: job.id, upstream: up.name, output, refused, reason: why }, 'video result: the vendor gave a download location the gateway never fetches from; the job fails, nothing charged');
    const message = `The vendor reported the job finished but gave a download location the gateway does not fetch from (${why}); nothing was charged.`;
    await settleFailed(deps, job, { code: 'generation_failed', message }, status.vendorData);
    return;
  }
  const { seconds, billable, adjusted } = settleSeconds(status, job.estSeconds, status.outputs.length);
  // billable <= held seconds already makes the cost at most the hold; the bound is stated anyway.
  const cost = Math.min(costForSeconds(job.pricePerSecondMicros, billable), job.holdMicros);
  const outputs: JsonObject[] = [];
  for (let i = 0; i < status.outputs.length; i++) outputs.push(await keepOutput(deps, job, status.outputs[i]!, inline[i], i));
  const usage: JsonObject | null = status.usage ? { ...status.usage } as JsonObject : null;
  const now = deps.clock.now();
  const settled = await releaseHold(deps, job.accountId, job.holdMicros - cost, () =>
    deps.store.completeJob(job.id, {
      seconds,
      billableSeconds: billable,
      costMicros: cost,
      usage,
      outputs,
      vendorData: status.vendorData,
      now,
    }),
  );
  if (!settled) return;
  videoSettlements.inc({ model: job.model, outcome: 'completed', code: '' });
  moneyReleased.inc({ model: job.model }, units(job.holdMicros));
  moneyCaptured.inc({ model: job.model }, units(cost));
  deps.log.info({ job: job.id, seconds, billable, cost }, 'video job completed');
  if (adjusted) await recordAdjustment(deps, job, adjusted, now);
  await afterSettle(deps, job);
}

/** The job is settled already: a trail that cannot be written is logged, not retried. */
async function recordAdjustment(deps: VideoDeps, job: JobRecord, adjusted: string, now: number): Promise<void> {
  deps.log.warn({ job: job.id, upstream: job.upstream, adjusted }, 'video billed seconds adjusted; recorded for reconciliation');
  try {
    await deps.store.recordReconcile({ jobId: job.id, upstream: job.upstream ?? '(unknown)', reason: `billed seconds adjusted: ${adjusted}`, now });
  } catch (e) {
    deps.log.error({ job: job.id, err: (e as Error).message }, 'could not record the billed seconds adjustment');
  }
}

/**
 * Uploads stay for the retention period after the job settles (a vendor may still fetch them);
 * a job the client deleted while it ran is purged whole at once.
 */
async function afterSettle(deps: VideoDeps, job: JobRecord): Promise<void> {
  const fresh = job.deletedAt === null ? await deps.store.getJob(job.id) : job;
  if (!fresh) return;
  if (fresh.deletedAt !== null) await deps.store.schedulePurge(job.id, deps.clock.now());
  else if (fresh.uploads.length > 0) await deps.store.schedulePurge(job.id, deps.clock.now() + deps.settings.uploadRetentionMs);
}

/**
 * Inline results (`bytes`, already checked to be a video) are written to the gateway's blob store
 * once, marked as checked so that downloads need not read their first bytes again (stored-copy.ts);
 * URLs are kept as references.
 */
async function keepOutput(deps: VideoDeps, job: JobRecord, out: VideoOutput, bytes: Buffer | undefined, index: number): Promise<JsonObject> {
  if (bytes) {
    const mimeType = videoMediaType(out.mimeType);
    const blob = await deps.blobs.put(`${job.id}-${index}.mp4`, bytes, mimeType);
    return { blob: blob.name, size: blob.size, mimeType, [CHECKED_WHEN_STORED]: true };
  }
  const kept: JsonObject = {};
  if (out.url) kept.url = out.url;
  if (out.mimeType) kept.mimeType = videoMediaType(out.mimeType);
  return kept;
}

/**
 * Why a job the deadline ends is recorded for reconciliation: its vendor task was never seen to
 * settle, and the vendor may still finish it (or has, unseen: its upstream is no longer configured)
 * and bill for it, while the client paid nothing. Written with the settlement, so once.
 */
function unsettledTask(deps: VideoDeps, job: JobRecord): string {
  const configured = jobUpstream(deps, job) !== undefined;
  return `deadline passed with vendor task ${job.taskId ?? '(none)'} unsettled${configured ? '' : '; its upstream is no longer configured'}`;
}

/** `reconcile`: a reconciliation record's reason, committed with the settlement if this call wins it. */
async function settleFailed(deps: VideoDeps, job: JobRecord, err: { code: string; message: string }, vendorData: JsonObject, reconcile?: string): Promise<void> {
  const settled = await releaseHold(deps, job.accountId, job.holdMicros, () =>
    deps.store.failJob(job.id, { code: err.code, message: err.message, vendorData, now: deps.clock.now(), reconcile }),
  );
  if (!settled) return;
  // Failure codes are the fixed set of spec 7.3 (FAILURE_CODES); anything else is counted as other.
  videoSettlements.inc({ model: job.model, outcome: 'failed', code: isFailureCode(err.code) ? err.code : 'other' });
  moneyReleased.inc({ model: job.model }, units(job.holdMicros));
  deps.log.info({ job: job.id, code: err.code }, 'video job failed; hold released');
  await afterSettle(deps, job);
}

/**
 * Retry later, more slowly each time, never later than a minute. The wait the last poll set (the
 * row's next poll less its last update) is doubled, so no counter is stored: after a poll that
 * answered it is the poll interval, and a failure starts over at twice that (at least 2 s).
 */
async function backoff(deps: VideoDeps, job: JobRecord, now: number): Promise<void> {
  const first = Math.max(deps.settings.pollIntervalMs, 1_000) * 2;
  const wait = Math.min(60_000, Math.max(first, 2 * (job.nextPollAt - job.updatedAt)));
  await deps.store.recordPoll(job.id, { vendorData: job.vendorData, progress: job.progress, nextPollAt: now + wait, now });
}
