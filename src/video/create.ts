import { randomUUID } from 'node:crypto';
import type { AuthContext } from '../auth/types.js';
import { redactorFor } from '../core/redact.js';
import { errors, isGatewayError, isStoreOutage } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import { costForSeconds, isMicros } from '../core/money.js';
import { MediaUnreachableError } from '../http/media.js';
import { TransportError, type Upstream } from '../http/types.js';
import { refusalGivesBack } from '../limits/refusal.js';
import type { ModelInfo } from '../routing/catalog.js';
import { withFailover } from '../routing/failover.js';
import { moneyReleased, units, videoSettlements } from '../ops/metrics.js';
import { annotateRequest, tracingOn } from '../ops/tracing.js';
import type { JobDialect, JobRecord, NewJob } from '../store/job-types.js';
import type { IdempotencyClaim } from '../store/idempotency-types.js';
import { checkCapabilities } from './capabilities.js';
import { CREATED_VENDOR_DATA, taskRefOf } from './refresh.js';
import { boundedAnswer, keptVendorData } from './vendors/answers.js';
import type { VideoDeps } from './deps.js';
import { checkOwnership, rejectForbiddenKeys } from './passthrough.js';
import { parseStandard } from './standard.js';
import type { CreateInput, InlineMedia, StandardVideoRequest, VideoVendor } from './types.js';
import { checkJobWebhook, takeJobWebhook } from '../webhooks/job-target.js';
import { newCallbackToken, withGatewayCallback } from './callbacks.js';
import { releaseHold } from './release.js';
import { placeJob, summarize } from './create-hold.js';
import { fetchMedia } from './fetch-media.js';
import { buildDerive, deriveHoldSeconds, parseDerive, type DeriveRequest } from './derive.js';
import { VideoAdmission } from './create-admission.js';

/** The HTTP request's side of a create: its abort signal, and the point of no return. */
export interface CreateControl {
  signal?: AbortSignal;
  /** Called just before money is held: from then on the create runs to its end and answers. */
  commit?(): void;
  /** The request's x-request-id: recorded on the job, and sent to vendors that take one. */
  requestId?: string;
  /**
   * Receives the admission's x-ratelimit-* headers, for every answer the create gives after it; and
   * again, replacing them, those after a give-back, for the refusal that caused it.
   */
  rateLimitHeaders?(headers: Record<string, string>): void;
  /** The Idempotency-Key the request holds (routes/idempotency.ts): the job is linked to it as its money is held. */
  idempotency?: IdempotencyClaim;
}

/** What the OpenAI surface adds to a create. */
export interface CreateOptions {
  /** The surface the job answers on (sealed into its id); the spec's by default. */
  dialect?: JobDialect;
  /** Blob names of files uploaded for this job (removed after it settles). */
  uploads?: string[];
  /** Bytes already at hand for some media URLs (the gateway's own upload links): never fetched. */
  prefetched?: ReadonlyMap<string, InlineMedia>;
  /** A remix: the finished job it starts from; it runs on that job's upstream, through the vendor's remix call. */
  remixOf?: JobRecord;
  /** An edit or an extension, of a finished job (run on its upstream) or of an uploaded video. */
  derive?: DeriveRequest;
  /**
   * The create's admission, taken by the caller before work it had to do first (see
   * create-admission.ts). The create takes it over where it would have admitted, and from then on
   * gives it back for the refusals it would give its own back for; a refusal before that point
   * (whatever its status) is the caller's to give back.
   */
  admitted?: VideoAdmission;
}

/**
 * POST /v1/videos/generations: validate, hold the estimate with the job row, create the upstream
 * task with failover, and pin the job to the upstream that accepted it.
 */
export async function createVideoJob(
  deps: VideoDeps,
  ctx: AuthContext,
  model: ModelInfo,
  body: JsonObject,
  control: CreateControl = {},
  opts: CreateOptions = {},
): Promise<JobRecord> {
  const target = takeJobWebhook(body);
  body = target.body;
  rejectForbiddenKeys(body);
  const { std, native } = parseStandard(body);
  const { remixOf, derive } = opts;
  // A remix, edit or extension of a finished job continues its upstream task, so only that upstream
  // can take it: the same name and the same vendor (a restart may give the name to another vendor's
  // upstream, which never had the task; then nothing can take it).
  const pinned = remixOf ?? derive?.source;
  const candidates = pinned
    ? deps.catalog.candidates(model.name, ctx.account).filter((u) => u.name === pinned.upstream && u.vendor === pinned.vendor)
    : deps.catalog.candidates(model.name, ctx.account);
  const vendor = vendorFor(deps, candidates, model.name);
  checkOwnership(native, vendor, model.name, deps.vendors.values());
  if (tracingOn()) annotateRequest({ 'gen_ai.operation.name': 'video_generation', 'gen_ai.system': vendor.id, 'gen_ai.request.model': model.name });

  // Model-family rules read the upstream's own name for the model (the first candidate's).
  const base = { model: model.name, upstreamModel: deps.catalog.upstreamModel(candidates[0]!, model.name), std, native };
  const estSeconds = remixOf ? (remixOf.seconds ?? remixOf.estSeconds) : derive ? deriveHoldSeconds(derive) : vendor.estimateSeconds(base);
  if (!remixOf && !derive) {
    vendor.validate?.({ ...base, media: new Map() });
    // After the vendor's own checks (their messages are the more specific), what the declared
    // capabilities (and the config's narrowing of them) exclude.
    const caps = deps.capabilities(model.name);
    if (caps) checkCapabilities(model.name, caps, std);
  }
  // No model makes a day of video in one job: a length or count past that (`duration: 1e300`, a
  // frame rate of 1e-300) is the request's mistake, a 400, not a balance too small for it.
  if (!(estSeconds <= MAX_SECONDS_ASKED))
    throw errors.invalidRequest(`This request asks for more than ${MAX_SECONDS_ASKED} seconds of video in one job; check its length, frame and count fields.`, lengthParam(std, native));
  const pricePerSecond = model.price.perSecond ?? 0;
  const hold = costForSeconds(pricePerSecond, estSeconds);
  // A length or count past any sense (a 400-digit duration) holds more than any balance: the 402 of
  // a hold that does not fit, before anything is counted.
  if (!isMicros(hold)) throw errors.insufficientQuota('This video would hold more than any balance can cover; ask for fewer or shorter videos.');
  if (target.url) await checkJobWebhook(deps.store, ctx.account.id, target.url, deps.settings.allowPrivateWebhooks ?? false);

  const admitted = opts.admitted?.takeOver() ?? (await VideoAdmission.admit(deps, ctx, control));

  let jobId: string;
  // Set only when the gateway registers its own callback URL with the vendor (see callbacks.ts).
  let callbackToken: string | undefined;
  let callbackNative: JsonObject | undefined;
  let media = new Map<string, InlineMedia>();
  let unreachable: MediaUnreachableError | undefined;
  try {
    try {
      media = await fetchMedia(deps, vendor, base, control.signal, opts.prefetched);
    } catch (e) {
      if (!(e instanceof MediaUnreachableError)) throw e;
      unreachable = e;
    }
    // Past this point a job holding money exists: the create must finish and answer, whatever the
    // clock says, or a retrying client would pay for a second job it never saw the first one of.
    if (control.signal?.aborted) throw new TransportError('aborted', 'the client is gone', false);
    control.commit?.();
    const now = deps.clock.now();
    jobId = randomUUID();
    callbackToken = deps.settings.vendorCallbacks ? newCallbackToken() : undefined;
    callbackNative = callbackToken ? withGatewayCallback(vendor, native, deps.settings.publicUrl, callbackToken) : undefined;
    const newJob: NewJob = {
      id: jobId,
      accountId: ctx.account.id,
      keyId: ctx.key.id,
      model: model.name,
      vendor: vendor.id,
      estSeconds,
      pricePerSecondMicros: pricePerSecond,
      request: summarize(body),
      requestId: control.requestId ?? null,
      createdAt: now,
      deadlineAt: now + deps.settings.deadlineMs,
      dialect: opts.dialect ?? 'spec',
      remixedFrom: remixOf?.publicId ?? null,
      uploads: opts.uploads ?? [],
      webhookUrl: target.url ?? null,
      callbackToken: callbackNative ? callbackToken : null,
      idempotency: control.idempotency,
    };
    await placeJob(deps, newJob, hold, now);
  } catch (e) {
    // Refused by the gateway before any job exists (media it will not fetch, 402), or the database
    // could not take the job (503 store_unavailable: nothing was written): the admission did no
    // work, so the video RPM quota gets it back, and the answer's headers show it given back.
    if ((isGatewayError(e) && e.status >= 400 && e.status < 500) || isStoreOutage(e)) await admitted.giveBack();
    throw e;
  }
  const surface = opts.dialect === 'openai' ? { s: 'o' as const } : {};
  if (unreachable) return deferFailure(deps, jobId, ctx.account.id, candidates[0]!, vendor.id, model.name, estSeconds, unreachable, surface);

  let submitted = false;
  try {
    const { value, upstream } = await withFailover(
      candidates,
      (up) => attemptCreate(deps, vendor, up, { ...base, native: callbackNative ?? native, upstreamModel: deps.catalog.upstreamModel(up, model.name), media }, opts, control.requestId),
      {
        circuits: deps.catalog.circuits,
        onMaybeSent: (up, err) => recordMaybeCreated(deps, jobId, up, err),
        onAttemptFailed: (up, reason) => deps.log.warn({ upstream: up.name, job: jobId, reason }, 'video create attempt failed'),
      },
    );
    const publicId = deps.sealer.seal({
      j: jobId, a: ctx.account.id, u: upstream.name, v: vendor.id, m: model.name, d: estSeconds, t: value.taskId, ...surface,
    });
    const at = deps.clock.now();
    // What else the create answer said is the job's vendor_data from now, kept as a poll's is
    // (bounded, redacted), and kept with the task too: each poll's fields are laid over it (refresh.ts).
    const createdVendorData = keptVendorData(value.vendorData ?? {}, (v) => redactorFor(upstream).json(v));
    submitted = await deps.store.markJobSubmitted(jobId, {
      upstream: upstream.name,
      taskId: value.taskId,
      publicId,
      taskMeta: {
        ...(value.meta ?? {}),
        upstreamModel: deps.catalog.upstreamModel(upstream, model.name),
        ...(Object.keys(createdVendorData).length > 0 ? { [CREATED_VENDOR_DATA]: createdVendorData } : {}),
      },
      vendorData: createdVendorData,
      nextPollAt: at + deps.settings.pollIntervalMs,
      now: at,
    });
    if (submitted) {
      const job = await deps.store.getJob(jobId);
      if (!job) throw errors.internal();
      return job;
    }
  } catch (e) {
    // The refresher may have released it already (a create past video.stale_submitting_ms): counted once.
    if (await releaseHold(deps, ctx.account.id, hold, () => deps.store.rejectJob(jobId, e instanceof Error ? e.message : 'create failed', deps.clock.now()))) {
      videoSettlements.inc({ model: model.name, outcome: 'rejected', code: '' });
      moneyReleased.inc({ model: model.name }, units(hold));
    }
    // The upstream refused the request itself (its 4xx, e.g. 400 upstream_rejected): no task exists,
    // so, as for embeddings and chat, the admission goes back (limits/refusal.ts). Failures after the
    // upstreams were put to work (5xx, timeouts) keep counting.
    if (refusalGivesBack(e)) await admitted.giveBack();
    throw e;
  }
  // The create ran past video.stale_submitting_ms and the refresher took it for one a dead process
  // left: the hold is released and the vendor's task recorded (markJobSubmitted). No job tracks the
  // task, so no id can be given; answering the row as it is would be a 200 with an empty id.
  throw errors.upstreamTimeout('The video create took longer than the gateway waits for one; nothing was held or charged. Retry the request.');
}

/**
 * A reference the vendor needs could not be fetched: the request itself was valid, so the job
 * exists and reads processing like any other, then fails at its first refresh (code invalid_media)
 * and its hold is released. No upstream task is created.
 */
async function deferFailure(
  deps: VideoDeps, jobId: string, accountId: string, up: Upstream, vendorId: string, model: string, seconds: number, err: MediaUnreachableError,
  surface: { s?: 'o' },
): Promise<JobRecord> {
  const at = deps.clock.now();
  const publicId = deps.sealer.seal({ j: jobId, a: accountId, u: up.name, v: vendorId, m: model, d: seconds, t: '', ...surface });
  const submitted = await deps.store.markJobSubmitted(jobId, {
    upstream: up.name,
    taskId: '',
    publicId,
    taskMeta: { deferred_failure: { code: 'invalid_media', message: err.message } },
    nextPollAt: at,
    now: at,
  });
  // As in createVideo: a row the refresher took for abandoned has had its hold released, and has no id to give.
  if (!submitted) throw errors.upstreamTimeout('The video create took longer than the gateway waits for one; nothing was held or charged. Retry the request.');
  const job = await deps.store.getJob(jobId);
  if (!job) throw errors.internal();
  return job;
}

/** A video model is served by upstreams of one vendor: its native parameters are that vendor's. */
function vendorFor(deps: VideoDeps, candidates: Upstream[], model: string): VideoVendor {
  const up = candidates[0];
  const vendor = up ? deps.vendors.get(up.vendor) : undefined;
  if (!vendor) throw errors.upstreamUnavailable(`No video upstream is configured for '${model}'.`);
  return vendor;
}

/**
 * The longest vendor task id taken. It is stored with the job and sent back in every poll's URL: a
 * vendor's megabyte-long id would make polls no server reads. Real ids are a few dozen characters;
 * a longer one is read as an unreadable answer (the task may have started: recorded for
 * reconciliation, nothing charged).
 */
const MAX_TASK_ID = 512;

async function attemptCreate(deps: VideoDeps, vendor: VideoVendor, up: Upstream, input: CreateInput, opts: CreateOptions, requestId: string | undefined) {
  const { remixOf, derive } = opts;
  const built = derive
    ? buildDerive(vendor, derive, input.model, input.upstreamModel, up)
    : remixOf && vendor.buildRemix
      ? vendor.buildRemix(taskRefOf(remixOf), input.std.prompt, up)
      : vendor.buildCreate(input, up);
  // A vendor that takes a client request id gets ours, so its logs and ours can be matched.
  if (requestId && vendor.requestIdHeader) built.headers = { ...built.headers, [vendor.requestIdHeader]: requestId };
  // Under the small cap of every video answer that carries no video (vendors/answers.ts). A body
  // may carry an uploaded reference inline, as the base64 string the create holds (and the budget
  // of bytes in flight counts): it is sent from that string, never from a serialised copy.
  const res = await deps.client.send(up, vendor, { ...boundedAnswer(built), bodyMedia: true });
  if (res.status < 200 || res.status >= 300) return { ok: false as const, verdict: vendor.classifyError(res) };
  try {
    const value = derive ? parseDerive(vendor, derive, res, input.model, input.upstreamModel, up) : vendor.parseCreate(res, input, up);
    if (value.taskId.length > MAX_TASK_ID) throw new Error('task id too long');
    return { ok: true as const, value };
  } catch {
    // A 2xx we cannot read may still have started a task; treat it like a lost answer.
    throw new TransportError('reset', `unreadable create answer from ${up.name}`, true);
  }
}

async function recordMaybeCreated(deps: VideoDeps, jobId: string, up: Upstream, err: TransportError): Promise<void> {
  deps.log.warn({ upstream: up.name, job: jobId, reason: err.reason }, 'video create may have reached the upstream; recorded for reconciliation');
  await deps.store.recordReconcile({ jobId, upstream: up.name, reason: `${err.reason}: ${redactorFor(up).text(err.message)}`, now: deps.clock.now() });
}

/** The most video one create may ask for, in seconds (a day: far past any vendor's longest job). */
const MAX_SECONDS_ASKED = 86_400;

/** The native fields that set a job's length or count, in the order an error names the first one sent. */
const LENGTH_FIELDS = ['duration', 'frames', 'num_frames', 'fps', 'n', 'num_videos', 'n_variants', 'n_seconds', 'sampleCount', 'durationSeconds'];

function lengthParam(std: StandardVideoRequest, native: JsonObject): string | undefined {
  if (std.seconds !== undefined && std.seconds > MAX_SECONDS_ASKED) return 'seconds';
  return LENGTH_FIELDS.find((k) => native[k] !== undefined);
}
