import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import { AdminService } from './admin/service.js';
import { Authenticator } from './auth/authenticator.js';
import { Authorizer } from './auth/authorize.js';
import { ChatService } from './chat/service.js';
import type { ZodTypeAny } from 'zod';
import { ConfigError, configSource } from './config/load.js';
import { upstreamOptionProblems } from './config/upstream-options.js';
import { resolveSecrets } from './config/runtime.js';
import { Reservations } from './billing/reservations.js';
import { ChargeBatcher, PG_PACE_MS, SQLITE_GATHER_MS } from './billing/charges.js';
import type { ConfigFile } from './config/schema.js';
import { systemClock, type Clock } from './core/clock.js';
import { compileSecrets, configuredSecrets, redact } from './core/redact.js';
import { IdSealer } from './core/sealed-id.js';
import { EmbeddingsService } from './embeddings/service.js';
import { BodyBudget } from './http/body-budget.js';
import { Executor } from './http/executor.js';
import { MediaFetcher } from './http/media.js';
import { ShutdownState } from './http/shutdown-state.js';
import { createLimiter } from './limits/index.js';
import type { RateLimiter } from './limits/types.js';
import { Catalog } from './routing/catalog.js';
import { openStore } from './store/index.js';
import type { Store } from './store/types.js';
import { LocalBlobStore, type BlobStore } from './video/blobs.js';
import { withOverride, type VideoCapabilities } from './video/capabilities.js';
import { Uploads } from './video/uploads.js';
import { FrameExtractor } from './video/frames.js';
import { FilesService } from './files/service.js';
import { UpstreamClient } from './http/upstream-client.js';
import { LinkSigner } from './video/links.js';
import { VideoPoller } from './video/poller.js';
import { VideoService } from './video/service.js';
import { videoCapabilities, videoModules, videoVendors } from './video/vendors/registry.js';
import { embeddingModules, embeddingVendorIds } from './embeddings/vendors/registry.js';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { Readiness } from './ops/readiness.js';
import { startTracing } from './ops/tracing-setup.js';
import { o200kCount } from './core/tokenizers.js';
import { WebhookAdmin } from './webhooks/admin.js';
import { WebhookDispatcher } from './webhooks/dispatcher.js';

/** Everything the app needs, built once at start. */
export interface Services {
  config: ConfigFile & { admin_token: string };
  logger: Logger;
  clock: Clock;
  store: Store;
  catalog: Catalog;
  executor: Executor;
  limiter: RateLimiter;
  authenticator: Authenticator;
  authorizer: Authorizer;
  admin: AdminService;
  video: VideoService;
  poller: VideoPoller;
  embeddings: EmbeddingsService;
  chat: ChatService;
  /** Batched charges; embeddings charges are acknowledged before they are written (`drain` writes them). */
  charges: ChargeBatcher;
  /** /ready's checks (store, migrations, Redis, `shutdown`). */
  readiness: Readiness;
  startedAt: number;
  /** Flips when a graceful shutdown begins (readiness reads it). */
  shutdown: ShutdownState;
  /** Webhook endpoints (admin) and the outbox delivery loop (started by `serve`). */
  webhooks: { admin: WebhookAdmin; dispatcher: WebhookDispatcher };
  /** Waits for background work, flushes batched charges, then closes pools, limiter and store. */
  close(): Promise<void>;
}

/** Where log lines go: stdout by default; tests pass a sink to read every line. */
export interface LogSink {
  write(line: string): unknown;
  flush?(cb?: (err?: Error) => void): unknown;
  /** Writes what is buffered before returning (an exit that cannot wait; see shutdown.ts). */
  flushSync?(): unknown;
}

/** The longest a log line waits in the logger's buffer before it is written (ms). */
export const LOG_FLUSH_MS = 250;

export function createLogger(level: ConfigFile['log_level'], opts: { secrets?: Iterable<string>; sink?: LogSink } = {}): Logger {
  // Buffered, asynchronous writes: a log line must not cost a write(2) on the request path. Under
  // load a write goes out per 4 KB; on a quiet gateway the buffer would hold its last lines until
  // 4 KB more arrived (minutes, or never), so it is also written every LOG_FLUSH_MS. Flushed on
  // close and at exit; `silent` needs no destination at all.
  const out: LogSink | undefined =
    opts.sink ?? (level === 'silent' ? undefined : pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: LOG_FLUSH_MS }));
  // Every line passes the one redaction, whatever logged it: upstream messages quote credentials.
  const secrets = compileSecrets(opts.secrets ?? []);
  const dest = out && {
    write: (line: string) => out.write(redact(line, secrets)),
    flush: (cb?: (err?: Error) => void) => (out.flush ? out.flush(cb) : cb?.()),
    flushSync: () => out.flushSync?.(),
  };
  return pino({
    level,
    redact: { paths: ['req.headers.authorization', 'req.headers["api-key"]', 'headers.authorization', 'apiKey', 'api_key', 'key'], censor: '[redacted]' },
    serializers: {
      // Query strings may carry signed-link signatures: log the path only.
      req: (r: { method?: string; url?: string }) => ({ method: r.method, url: String(r.url ?? '').split('?')[0] }),
    },
  }, dest as never);
}

/**
 * Checks what the config schema cannot: every upstream's vendor is known, its options match the schema
 * that vendor declares, and a video model has one vendor. Problems name the file the config came from.
 */
export function checkVendors(cfg: ConfigFile): void {
  const file = configSource(cfg);
  const known = new Set<string>([...videoVendors.keys(), ...embeddingVendorIds]);
  const problems: string[] = [];
  const videoVendorOf = new Map<string, string>();
  cfg.upstreams.forEach((u, i) => {
    if (!known.has(u.vendor)) problems.push(`${file}: upstreams[${i}].vendor: unknown vendor '${u.vendor}' (known: ${[...known].join(', ')})`);
    for (const m of u.models) {
      if (!cfg.models[m]?.capabilities.includes('video')) continue;
      const prev = videoVendorOf.get(m);
      if (prev && prev !== u.vendor) problems.push(`${file}: upstreams[${i}].models: video model '${m}' is served by vendors '${prev}' and '${u.vendor}'; a video model takes one vendor's parameters`);
      videoVendorOf.set(m, u.vendor);
    }
  });
  problems.push(...upstreamOptionProblems(cfg, file, (vendor) => optionSchemas.get(vendor)));
  if (problems.length) throw new ConfigError(['invalid configuration', ...problems].join('\n  '));
}

/** Each vendor's upstream-options schema, by vendor id (video and embeddings ids never collide). */
const optionSchemas = new Map<string, ZodTypeAny>([
  ...videoModules.map((m) => [m.vendor.id, m.optionsSchema] as const),
  ...embeddingModules.map((m) => [m.id, m.optionsSchema] as const),
]);

/** The S3 client (about 20 MB of RSS) is imported only by a gateway configured for S3. */
async function blobStoreFor(cfg: ConfigFile): Promise<BlobStore & { close?(): void }> {
  const b = cfg.video.blobs;
  if (b.backend === 'local') return new LocalBlobStore(join(cfg.data_dir, 'videos'));
  const { S3BlobStore } = await import('./video/blobs-s3.js');
  return new S3BlobStore({
    bucket: b.bucket,
    prefix: b.prefix,
    endpoint: b.endpoint,
    region: b.region,
    forcePathStyle: b.force_path_style,
    accessKeyId: b.access_key_id,
    secretAccessKey: b.secret_access_key,
  });
}

/**
 * A video model's capabilities: its vendor's declaration for the upstream's name of it, with the
 * config's override. Computed once per model (the config does not change while running).
 */
export function capabilitiesSource(cfg: ConfigFile, catalog: Catalog): (model: string) => VideoCapabilities | undefined {
  const known = new Map<string, VideoCapabilities | undefined>();
  return (model) => {
    if (known.has(model)) return known.get(model);
    const info = catalog.model(model);
    const up = catalog.upstreamsOf(model)[0];
    const declare = up ? videoCapabilities.get(up.vendor) : undefined;
    const caps = info?.capabilities.includes('video') && up && declare
      ? withOverride(declare(catalog.upstreamModel(up, model)), cfg.models[model]?.video as Partial<VideoCapabilities> | undefined)
      : undefined;
    if (catalog.model(model)) known.set(model, caps);
    return caps;
  };
}

/** A thumbnail the gateway can extract itself (ffmpeg found) is a variant of every video model. */
function withGatewayThumbnails(
  source: (model: string) => VideoCapabilities | undefined,
  frames: FrameExtractor | undefined,
): (model: string) => VideoCapabilities | undefined {
  return (model) => {
    const caps = source(model);
    if (!caps || caps.variants.includes('thumbnail') || !frames?.availableNow()) return caps;
    return { ...caps, variants: [...caps.variants, 'thumbnail'] };
  };
}

function frameExtractorFor(cfg: ConfigFile, log: { warn(obj: object, msg?: string): void }): FrameExtractor | undefined {
  const t = cfg.video.thumbnails;
  if (!t.enabled) return undefined;
  return new FrameExtractor(
    {
      ffmpegPath: t.ffmpeg_path,
      concurrency: t.concurrency,
      queueLimit: t.queue_limit,
      timeoutMs: t.timeout_ms,
      maxInputBytes: t.max_input_bytes,
      maxOutputBytes: t.max_output_bytes,
      tmpDir: join(cfg.data_dir, 'tmp'),
    },
    log,
  );
}

export async function buildServices(
  cfg: ConfigFile,
  opts: { logger?: Logger; logSink?: LogSink; clock?: Clock; spanExporter?: SpanExporter } = {},
): Promise<Services> {
  checkVendors(cfg);
  const catalog = new Catalog(cfg);
  // Chat admission counts prompts with o200k: a gateway that serves chat loads the table now rather
  // than on its first chat request; one that does not never holds it (core/tokenizers.ts).
  if (Object.values(cfg.models).some((m) => m.capabilities.includes('chat'))) o200kCount();
  const upstreamSecrets = [...catalog.upstreams.values()].flatMap((u) => configuredSecrets(u));
  const logger = opts.logger ?? createLogger(cfg.log_level, { secrets: upstreamSecrets, sink: opts.logSink });
  // Before anything that makes spans; a no-op unless tracing is configured (or an exporter is given).
  const tracing = await startTracing(cfg.tracing, { exporter: opts.spanExporter });
  const clock = opts.clock ?? systemClock;
  const secrets = resolveSecrets(cfg);
  const store = await openStore(cfg.database, { dataDir: cfg.data_dir });
  // Upstream answers read whole share one process-wide memory budget (http/answer-budget.ts).
  const answerBudget = new BodyBudget(cfg.server.max_inflight_answer_bytes);
  const executor = new Executor({ answers: { budget: answerBudget, maxBytes: cfg.server.max_answer_bytes } });
  // The one upstream client (credentials, then signing, then the executor) for video, embeddings and chat.
  const client = new UpstreamClient(executor);
  const limiter = await createLimiter(cfg.limits, { logger: { warn: (m) => logger.warn(m), info: (m) => logger.info(m) } });
  const authenticator = new Authenticator(store, clock);
  const authorizer = new Authorizer(catalog);

  const media = new MediaFetcher({
    allowPrivateNetworks: cfg.video.media.allow_private_networks,
    allowedOrigins: cfg.video.media.allowed_origins,
    maxBytes: cfg.video.media.max_bytes,
    timeoutMs: cfg.video.media.timeout_ms,
    budget: answerBudget,
  });
  const publicUrl = (cfg.server.public_url ?? `http://${cfg.server.host}:${cfg.server.port}`).replace(/\/+$/, '');
  const blobs = await blobStoreFor(cfg);
  const frames = frameExtractorFor(cfg, logger);
  // Looked for once at start, so the models list can say whether the gateway makes thumbnails.
  void frames?.available();
  const capabilities = withGatewayThumbnails(capabilitiesSource(cfg, catalog), frames);
  const links = new LinkSigner(secrets.idSecrets[secrets.idSecrets.length - 1]!, cfg.video.link_ttl_ms);
  const settings = {
    pollIntervalMs: cfg.video.poll_interval_ms,
    deadlineMs: cfg.video.deadline_ms,
    leaseMs: cfg.video.lease_ms,
    publicUrl,
    uploadMaxBytes: cfg.video.uploads.max_bytes,
    uploadVideoMaxBytes: cfg.video.uploads.max_video_bytes,
    uploadVideoMaxSeconds: cfg.video.uploads.max_video_seconds,
    uploadRetentionMs: cfg.video.uploads.retention_ms,
    vendorCallbacks: cfg.server.public_url !== undefined,
    callbackRefreshesPerMinute: cfg.video.callback_refreshes_per_minute,
    allowPrivateWebhooks: cfg.webhooks.allow_private_networks,
  };
  const video = new VideoService({
    store,
    catalog,
    client,
    vendors: videoVendors,
    sealer: new IdSealer(secrets.idSecrets),
    links,
    blobs,
    // The public URL is read at use: tests (and a port chosen by the OS) settle it after start.
    uploads: new Uploads(blobs, links, () => settings.publicUrl),
    capabilities,
    media,
    frames,
    files: new FilesService(store, blobs, clock, { maxBytes: cfg.video.files.max_bytes, retentionMs: cfg.video.files.retention_ms }),
    limiter,
    limitDefaults: cfg.limits.defaults.video,
    clock,
    log: logger,
    settings,
  });
  const poller = new VideoPoller(video, cfg.video.refresher_interval_ms, cfg.video.stale_submitting_ms);
  // Money promised to in-flight embeddings and chat requests, so parallel ones cannot overdraw.
  const reservations = new Reservations(store);
  const admin = new AdminService(store, catalog, clock, () => {
    authenticator.invalidate();
    reservations.forgetBalances();
  });
  // Embeddings charges are acknowledged before their write lands (bounded; drained at shutdown).
  const charges = new ChargeBatcher(store, {
    ...(store.kind === 'sqlite' ? { gatherMs: SQLITE_GATHER_MS } : { paceMs: PG_PACE_MS }),
    onError: (e, ref) => logger.error(`billing: charge ${ref} not written yet: ${e instanceof Error ? e.message : String(e)}`),
  });
  const common = { catalog, store, executor, client, limiter, clock, reservations, charges };
  const embeddings = new EmbeddingsService({ ...common, defaults: cfg.limits.defaults.embeddings });
  const shutdown = new ShutdownState();
  const readiness = new Readiness(store, shutdown, cfg.limits.backend === 'redis' ? cfg.limits.redis_url : undefined);
  const chat = new ChatService({
    ...common,
    defaults: cfg.limits.defaults.chat,
    defaultOutputReserveTokens: cfg.chat.default_output_reserve_tokens,
    logger: { warn: (m) => logger.warn(m), error: (m) => logger.error(m) },
  });
  const w = cfg.webhooks;
  const webhooks = {
    admin: new WebhookAdmin(admin, store, clock, w.allow_private_networks),
    dispatcher: new WebhookDispatcher(
      store,
      clock,
      {
        intervalMs: w.interval_ms,
        concurrency: w.concurrency,
        perOriginConcurrency: w.per_origin_concurrency,
        perAccountConcurrency: w.per_account_concurrency,
        timeoutMs: w.timeout_ms,
        leaseMs: w.lease_ms,
        retryBaseMs: w.retry_base_ms,
        maxDelayMs: w.max_delay_ms,
        maxAttempts: w.max_attempts,
        allowPrivateNetworks: w.allow_private_networks,
        retentionMs: w.retention_days * 86_400_000,
      },
      { warn: (o, m) => logger.warn(o, m) },
    ),
  };
  return {
    config: { ...cfg, admin_token: secrets.adminToken },
    logger,
    clock,
    store,
    catalog,
    executor,
    limiter,
    authenticator,
    authorizer,
    admin,
    video,
    poller,
    embeddings,
    chat,
    charges,
    readiness,
    startedAt: clock.now(),
    shutdown,
    webhooks,
    async close() {
      await poller.stop();
      await video.stopCallbacks();
      await webhooks.dispatcher.stop();
      // Answers already sent are billed before the store goes away.
      await charges.drain();
      await Promise.allSettled([executor.close(), media.close(), limiter.close(), readiness.close()]);
      blobs.close?.();
      await store.close();
      await tracing?.shutdown();
      logger.flush();
    },
  };
}
