import type { Logger } from 'pino';
import { AdminService } from './admin/service.js';
import { Authenticator } from './auth/authenticator.js';
import { Authorizer } from './auth/authorize.js';
import { ChatService } from './chat/service.js';
import { resolveSecrets } from './config/runtime.js';
import { Reservations } from './billing/reservations.js';
import { ChargeBatcher, PG_PACE_MS, SQLITE_GATHER_MS } from './billing/charges.js';
import type { ConfigFile } from './config/schema.js';
import { systemClock, type Clock } from './core/clock.js';
import { configuredSecrets } from './core/redact.js';
import { EmbeddingsService } from './embeddings/service.js';
import { BodyBudget } from './http/body-budget.js';
import { Executor } from './http/executor.js';
import { ShutdownState } from './http/shutdown-state.js';
import { createLimiter } from './limits/index.js';
import type { RateLimiter } from './limits/types.js';
import { Catalog } from './routing/catalog.js';
import { openStore } from './store/index.js';
import type { Store } from './store/types.js';
import { UpstreamClient } from './http/upstream-client.js';
import type { VideoPoller } from './video/poller.js';
import type { VideoService } from './video/service.js';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { createLogger, type LogSink } from './ops/logger.js';
import { Readiness } from './ops/readiness.js';
import { startTracing } from './ops/tracing-setup.js';
import { o200kCount } from './core/tokenizers.js';
import { closeErrorText, StartRollback } from './core/start-rollback.js';
import { checkVendors } from './vendor-check.js';
import { buildVideoServices } from './video-services.js';
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
  /**
   * Called once the server listens, with the port it got: output URLs and vendor callbacks made from
   * the listener's own address (no `public_url`) name that port, not 0 when the OS chose it.
   */
  listening(port: number): void;
  /** Waits for background work, flushes batched charges, then closes pools, limiter and store. */
  close(): Promise<void>;
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
  // The blob store's key is a credential like an upstream's: a storage error may quote what it was sent.
  const blobStore = cfg.video.blobs;
  if (blobStore.backend === 's3' && blobStore.secret_access_key) upstreamSecrets.push(blobStore.secret_access_key);
  // The gateway's own secrets are hidden from the log the same way: the admin token (an error quoting
  // a request's headers, a config echoed back) and the id-sealing secrets (anyone holding one can
  // forge and read job ids), configured or generated into the data dir.
  const secrets = resolveSecrets(cfg);
  const logSecrets = [...upstreamSecrets, secrets.adminToken, ...secrets.idSecrets];
  const logger = opts.logger ?? createLogger(cfg.log_level, { secrets: logSecrets, sink: opts.logSink });
  // A step that fails closes what the steps before it opened (last first), as `close` would.
  const opened = new StartRollback((what, e) => logger.error(`start-up failed; closing ${what} also failed: ${closeErrorText(e)}`));
  opened.add('the log', () => logger.flush());
  return opened.guard(async () => {
    const services = await buildOpened(cfg, opts, { catalog, logger, secrets, opened });
    opened.release();
    return services;
  });
}

/** buildServices once the logger exists: everything it opens goes on `opened`. */
async function buildOpened(
  cfg: ConfigFile,
  opts: { clock?: Clock; spanExporter?: SpanExporter },
  { catalog, logger, secrets, opened }: { catalog: Catalog; logger: Logger; secrets: ReturnType<typeof resolveSecrets>; opened: StartRollback },
): Promise<Services> {
  // Before anything that makes spans; a no-op unless tracing is configured (or an exporter is given).
  const tracing = await startTracing(cfg.tracing, { exporter: opts.spanExporter });
  if (tracing) opened.add('tracing', () => tracing.shutdown());
  const clock = opts.clock ?? systemClock;
  const store = await openStore(cfg.database, { dataDir: cfg.data_dir, onLockWait: (m) => logger.warn(m) });
  opened.add('the database', () => store.close());
  // Upstream answers read whole share one process-wide memory budget (http/answer-budget.ts).
  const answerBudget = new BodyBudget(cfg.server.max_inflight_answer_bytes);
  const executor = new Executor({ answers: { budget: answerBudget, maxBytes: cfg.server.max_answer_bytes } });
  opened.add('the upstream connection pool', () => executor.close());
  // The one upstream client (credentials, then signing, then the executor) for video, embeddings and chat.
  const client = new UpstreamClient(executor);
  const limiter = await createLimiter(cfg.limits, { logger: { warn: (m) => logger.warn(m), info: (m) => logger.info(m) } });
  opened.add('the rate limiter', () => limiter.close());
  const authenticator = new Authenticator(store, clock);
  const authorizer = new Authorizer(catalog);
  // Money promised to in-flight embeddings and chat requests, so parallel ones cannot overdraw
  // (video holds taken here leave it covered too).
  const reservations = new Reservations(store);
  const { video, poller, media, blobs, listening } = await buildVideoServices(cfg, {
    store,
    catalog,
    client,
    limiter,
    clock,
    logger,
    idSecrets: secrets.idSecrets,
    answerBudget,
    reservations,
    opened,
  });
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
  opened.add('the readiness probe', () => readiness.close());
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
    listening,
    async close() {
      video.stopRefreshes();
      await poller.stop();
      await video.stopCallbacks();
      await webhooks.dispatcher.stop();
      // Answers already sent are billed before the store goes away.
      await charges.drain();
      await Promise.allSettled([executor.close(), media.close(), limiter.close(), readiness.close(), chat.close()]);
      blobs.close?.();
      await store.close();
      await tracing?.shutdown();
      logger.flush();
    },
  };
}
