import { setMaxListeners } from 'node:events';
import { keyMayUseModel, type KeyModels } from '../auth/authorize.js';
import type { AuthContext } from '../auth/types.js';
import { errors } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import type { ModelInfo } from '../routing/catalog.js';
import type { JobRecord } from '../store/job-types.js';
import { openContent, openVariant, vendorMakesVariant, type ContentAsk, type ContentReply, type ContentViewer } from './content.js';
import { gatewayThumbnail } from './thumbnail.js';
import { createVideoJob, type CreateControl, type CreateOptions } from './create.js';
import type { VideoDeps } from './deps.js';
import { cancelUpstream, deletedAnswer, mayCancelUpstream, listJobs, purgeJob, type ListQuery } from './manage.js';
import { presentOpenAiVideo } from './openai/present.js';
import { presentJob } from './present.js';
import { refreshJob } from './refresh.js';
import { jobUpstream } from './job-upstream.js';
import { JobCache } from './job-cache.js';
import { AnswerCache } from './answer-cache.js';
import { CALLBACK_TOKEN, CallbackThrottle } from './callbacks.js';
import { CallbackAuth } from './callback-auth.js';
import { checkDerivable } from './derive.js';
import { untilPolledByUs } from './delete-wait.js';
import { IdempotencyKeys } from './idempotency.js';
import type { DeriveOp } from './types.js';

/** A job is refreshed from its vendor at most once per this many ms however often it is called back. */
const CALLBACK_WINDOW_MS = 1_000;
const DEFAULT_CALLBACK_REFRESHES_PER_MINUTE = 20;
/** server.request_timeout_ms's default and a margin: a create's request is over by then unless it committed (and linked its job). */
const DEFAULT_IDEMPOTENCY_ABANDON_MS = 150_000;

/** Built only on the failure path: constructing an Error captures a stack trace. */
function notFound(id: string) {
  return errors.notFound(`No video job with id '${id.length > 64 ? `${id.slice(0, 64)}...` : id}'.`, 'video_not_found');
}

/** The video endpoints' logic: create, poll (with on-demand refresh) and content. */
export class VideoService {
  readonly jobs: JobCache;
  /** Idempotency-Key records of the create routes (routes/idempotency.ts). */
  readonly idempotency: IdempotencyKeys;
  private readonly answers = new AnswerCache((job) => this.present(job));
  private readonly callbacks = new CallbackThrottle(CALLBACK_WINDOW_MS);
  private readonly callbackAuth: CallbackAuth;
  /** Aborted when shutdown begins: vendor polls in flight are cut short and none starts (`stopRefreshes`). */
  private readonly stopping = new AbortController();

  constructor(readonly deps: VideoDeps) {
    // Every vendor poll in flight listens on it (a refresher pass polls 25 jobs at once, client GETs
    // more): so many listeners are the design, not the leak Node warns of past 10.
    setMaxListeners(0, this.stopping.signal);
    this.jobs = new JobCache(deps.store, deps.clock);
    this.idempotency = new IdempotencyKeys(deps.store, deps.clock, deps.settings.idempotencyAbandonMs ?? DEFAULT_IDEMPOTENCY_ABANDON_MS);
    this.callbackAuth = new CallbackAuth(deps.client, () => deps.clock.now());
  }

  /**
   * A vendor called back on a job's token. The body's content is not used: the job is refreshed from
   * the vendor's authenticated API, so a forged or replayed callback can cause at most an early
   * poll. Where the vendor signs its callbacks, the signature must verify too, else nothing happens.
   * 'unknown' when no job has this token (the caller answers 404), 'refused' for a bad signature (401).
   */
  async vendorCallback(token: string, request: { headers: Record<string, string | string[] | undefined>; body: Buffer }): Promise<'accepted' | 'unknown' | 'refused'> {
    if (!CALLBACK_TOKEN.test(token)) return 'unknown';
    const job = await this.deps.store.getJobByCallbackToken(token);
    if (!job) return 'unknown';
    const vendor = this.deps.vendors.get(job.vendor);
    if (vendor?.callbackSignature) {
      const up = jobUpstream(this.deps, job);
      const verdict = await this.callbackAuth.verify(vendor, up, request.headers, request.body);
      if (!verdict.ok) {
        this.deps.log.warn({ job: job.id, vendor: vendor.id, reason: verdict.reason }, 'vendor callback refused');
        return 'refused';
      }
    }
    if (job.state !== 'processing') return 'accepted';
    this.callbacks.run(job.id, async () => {
      if (!(await this.admitCallbackRefresh(job.id))) return;
      const fresh = await this.deps.store.getJob(job.id);
      if (fresh?.state === 'processing') await this.refresh(fresh);
    });
    return 'accepted';
  }

  /**
   * The per-job callback limit shared by every instance: the local throttle bounds one process to a
   * refresh a second, this bounds them all together (through Redis when the limiter is Redis, with
   * its local fallback during an outage). A refused refresh is skipped: polling still settles the job.
   */
  private async admitCallbackRefresh(jobId: string): Promise<boolean> {
    const rpm = this.deps.settings.callbackRefreshesPerMinute ?? DEFAULT_CALLBACK_REFRESHES_PER_MINUTE;
    if (rpm <= 0) return true;
    try {
      return (await this.deps.limiter.admit('callback', [{ id: `job:${jobId}`, quota: { rpm } }], 0)).allowed;
    } catch {
      // The limiter itself failed (not an outage it handles): the local throttle still bounds the work.
      return true;
    }
  }

  /**
   * Shutdown: a vendor poll in flight (the refresher's, a client GET's, a callback's) is aborted
   * rather than waited for, since a vendor that stalls would hold the drain for the upstream's whole
   * timeout (30 s by default, past the 25 s grace) and the process would exit 1 with the job's poll
   * lease still taken. Each job is handed back due at once (refresh.ts); polls started later are
   * aborted before they are sent.
   */
  stopRefreshes(): void {
    this.stopping.abort();
  }

  /** Shutdown: callback-driven refreshes stop and the running ones finish (before the store closes). */
  stopCallbacks(): Promise<void> {
    return this.callbacks.stop();
  }

  async create(ctx: AuthContext, model: ModelInfo, body: JsonObject, req?: CreateControl, opts?: CreateOptions): Promise<JsonObject> {
    const job = await createVideoJob(this.deps, ctx, model, body, req, opts);
    return this.present(job);
  }

  /**
   * A repeated create (same Idempotency-Key): the job it made, as a poll would answer it now (so
   * never stale, and nothing of the first answer stored). A job the account deleted since, or one
   * of a model this key may not use, is the 404 a poll gets.
   */
  async replay(ctx: AuthContext, jobId: string): Promise<JsonObject> {
    const job = await this.jobs.get(jobId);
    if (!job?.publicId) throw errors.internal();
    return this.present(await this.current(ctx, job.publicId));
  }

  /** GET /v1/videos/{id}: the job's answer as JSON text; most polls reuse the text of an earlier one. */
  async getJson(ctx: AuthContext, id: string): Promise<string> {
    return this.answers.json(await this.current(ctx, id));
  }

  /**
   * The job behind a public id, refreshed from its vendor first when it is due. The refreshed row is
   * judged again: a DELETE acknowledged while the vendor was being polled has removed the job, and
   * no read after that acknowledgement may answer it (the refresh's own writes never undo a delete).
   */
  private async current(ctx: AuthContext, id: string): Promise<JobRecord> {
    const job = await this.load(id, ctx.account.id, ctx.key);
    if (job.state !== 'processing' || this.deps.clock.now() < job.nextPollAt) return job;
    const fresh = await this.refresh(job);
    if (!isReadable(fresh, ctx.account.id)) throw notFound(id);
    return fresh;
  }

  /** A job in the dialect it was created in (OpenAI's video object, or the spec's job object). */
  present(job: JobRecord): JsonObject {
    if (job.dialect === 'openai') return presentOpenAiVideo(job, this.deps.capabilities(job.model), this.deps.clock.now());
    return presentJob(job, job.state === 'completed' && job.publicId ? this.outputUrl(job.publicId) : undefined);
  }

  /** GET /v1/videos: OpenAI's list shape; each job in its own dialect. */
  async list(ctx: AuthContext, q: ListQuery): Promise<JsonObject> {
    const { jobs, hasMore } = await listJobs(this.deps, ctx, q);
    const data = jobs.map((j) => this.present(j));
    return { object: 'list', data, first_id: jobs[0]?.publicId ?? null, last_id: jobs[jobs.length - 1]?.publicId ?? null, has_more: hasMore };
  }

  /**
   * DELETE /v1/videos/{id}: a processing job is read from its vendor first, then cancelled upstream
   * where the vendor can if it still runs (hold released, no charge); either way the job is gone from reads and lists at once, and what the
   * gateway stored for it is removed (a processing job's once it settles).
   */
  async delete(ctx: AuthContext, id: string): Promise<JsonObject> {
    let job = await this.load(id, ctx.account.id, ctx.key);
    if (job.state === 'processing') {
      // The vendor is asked first, whenever the job was last polled: a task that has finished settles
      // (and is billed) as it is. Only a task still running is cancelled, since some vendors' cancel
      // call (Ark's, Azure's DELETE) also removes a finished task with a 2xx, which would otherwise
      // release the hold of a video the client may already hold (e.g. through its own callback_url).
      // Without a cancel call there is nothing to get wrong by not waiting for another caller's poll.
      job = mayCancelUpstream(this.deps, job) ? await this.refreshBeforeCancel(job) : await this.refresh(job);
      if (!isReadable(job, ctx.account.id)) throw notFound(id);
      if (job.state === 'processing') await cancelUpstream(this.deps, job);
    }
    const gone = await this.deps.store.deleteJob(job.id, this.deps.clock.now());
    this.jobs.forget(job.id);
    if (!gone) throw notFound(id);
    const after = await this.deps.store.getJob(job.id);
    if (after && after.purgeAt !== null) {
      await purgeJob(this.deps, after).catch((e) => this.deps.log.warn({ job: job.id, err: (e as Error).message }, 'purge failed; the refresher retries'));
    }
    return deletedAnswer(id);
  }

  /** The finished job a remix starts from: it must be complete, and its vendor must have a remix call. */
  async remixSource(ctx: AuthContext, id: string): Promise<JobRecord> {
    const job = await this.load(id, ctx.account.id, ctx.key);
    const caps = this.deps.capabilities(job.model);
    if (!caps?.remix || !this.deps.vendors.get(job.vendor)?.buildRemix)
      throw errors.invalidRequest(`Remix is not supported for model '${job.model}'.`, 'model', 'remix_unsupported');
    return this.finishedSource(ctx, job, 'remix');
  }

  /**
   * The finished job an edit or an extension starts from (`video: {id}`): one of the account's (any
   * other id is the same 404 as everywhere), its vendor offering the operation (vendor/derive.ts),
   * complete, and on an upstream the account may still use.
   */
  async deriveSource(ctx: AuthContext, id: string, op: DeriveOp): Promise<JobRecord> {
    const job = await this.load(id, ctx.account.id, ctx.key);
    checkDerivable(this.deps, job.model, job.vendor, op);
    return this.finishedSource(ctx, job, op === 'edit' ? 'edit' : 'extend');
  }

  private finishedSource(ctx: AuthContext, job: JobRecord, what: string): JobRecord {
    if (job.state !== 'completed') throw errors.videoNotReady(job.state === 'failed' ? 'failed' : 'still processing');
    // Only the upstream that made the source can continue its task: one the account may no longer
    // use is a permission it lacks (never another upstream, and no outage either).
    const { catalog } = this.deps;
    if (job.upstream && jobUpstream(this.deps, job) && !catalog.servingUpstreams(job.model, ctx.account).some((u) => u.name === job.upstream))
      throw errors.permissionDenied(`The upstream that made this video is not enabled for this account, and only it can ${what} the video.`);
    return job;
  }

  /**
   * The viewer's `accountId` comes from the bearer key (then `key` is that key, whose model patterns
   * narrow what it reads), or from a verified signed link (no key: the link was handed out by a read of the job).
   */
  async content(viewer: ContentViewer, id: string, ask: ContentAsk): Promise<ContentReply> {
    const job = await this.load(id, viewer.accountId, viewer.key);
    const variant = ask.variant ?? 'video';
    if (variant === 'video') return openContent(this.deps, job, ask.index, ask.range, ask.signal);
    if (variant !== 'thumbnail' && variant !== 'spritesheet')
      throw errors.invalidRequest("'variant' must be one of video, thumbnail, spritesheet.", 'variant');
    // Thumbnails: the vendor's where it makes one, else one the gateway extracts itself.
    if (variant === 'thumbnail' && !vendorMakesVariant(this.deps, job, variant)) return gatewayThumbnail(this.deps, job, ask.signal);
    return openVariant(this.deps, job, variant, ask.signal);
  }

  /** Signed link verification for output_url (no bearer header needed). */
  accountForSignedLink(id: string, expires: unknown, signature: unknown): string | undefined {
    if (!this.deps.links.verify(id, expires, signature, this.deps.clock.now())) return undefined;
    return this.deps.sealer.open(id)?.a;
  }

  outputUrl(id: string): string {
    const { expires, signature } = this.deps.links.sign(id, this.deps.clock.now());
    return `${this.deps.settings.publicUrl}/v1/videos/${id}/content?expires=${expires}&signature=${signature}`;
  }

  /** Refreshes a due job if this caller wins the poll lease; returns the freshest row either way. */
  async refresh(job: JobRecord): Promise<JobRecord> {
    return (await this.pollOnce(job)).job;
  }

  /** The vendor's word on a processing job before it is cancelled (delete-wait.ts says why it waits). */
  private refreshBeforeCancel(job: JobRecord): Promise<JobRecord> {
    return untilPolledByUs(job, this.deps.settings.leaseMs, (j) => this.pollOnce(j));
  }

  /** `polled`: this caller held the lease and asked the vendor (successfully or not). */
  private async pollOnce(job: JobRecord): Promise<{ job: JobRecord; polled: boolean }> {
    const now = this.deps.clock.now();
    const polled = await this.deps.store.acquirePollLease(job.id, now, this.deps.settings.leaseMs);
    if (polled) {
      try {
        await refreshJob(this.deps, job, this.stopping.signal);
      } catch (e) {
        this.deps.log.error({ job: job.id, err: (e as Error).message }, 'video refresh failed');
        // Hand the lease back rather than leave the job unpolled until it expires.
        await this.deps.store
          .recordPoll(job.id, { vendorData: job.vendorData, progress: job.progress, nextPollAt: now + this.deps.settings.pollIntervalMs, now })
          .catch(() => undefined);
      }
    }
    this.jobs.forget(job.id);
    return { job: (await this.jobs.get(job.id)) ?? job, polled };
  }

  /**
   * Opens a public id: anything malformed, tampered, sealed with an unknown key, or belonging to
   * another account is the same 404, so ids reveal nothing. A key limited to some models reads only
   * its account's jobs of those models: the others are that same 404, as they are absent from its lists.
   */
  private async load(id: string, accountId: string, key?: KeyModels): Promise<JobRecord> {
    const claims = this.deps.sealer.open(id);
    // A character's id is sealed alike, but names no job.
    if (!claims || claims.a !== accountId || claims.k !== undefined) throw notFound(id);
    const job = await this.jobs.get(claims.j);
    if (!job || !isReadable(job, accountId) || (key && !keyMayUseModel(key, job.model))) throw notFound(id);
    return job;
  }
}

/** A job its account can read: created (not still submitting, not rejected) and not deleted. */
function isReadable(job: JobRecord, accountId: string): boolean {
  return job.accountId === accountId && job.state !== 'submitting' && job.state !== 'rejected' && job.deletedAt === null;
}
