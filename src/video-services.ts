import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Reservations } from './billing/reservations.js';
import type { ConfigFile } from './config/schema.js';
import type { Clock } from './core/clock.js';
import { IdSealer } from './core/sealed-id.js';
import type { StartRollback } from './core/start-rollback.js';
import { FilesService } from './files/service.js';
import type { BodyBudget } from './http/body-budget.js';
import { isWildcardHost, listenerUrl, loopbackUrlsNotice } from './http/listener-url.js';
import { MediaFetcher } from './http/media.js';
import type { UpstreamClient } from './http/upstream-client.js';
import type { RateLimiter } from './limits/types.js';
import type { Catalog } from './routing/catalog.js';
import type { Store } from './store/types.js';
import { LocalBlobStore, type BlobStore } from './video/blobs.js';
import { withOverride, type VideoCapabilities } from './video/capabilities.js';
import { FrameExtractor } from './video/frames.js';
import { LinkSigner } from './video/links.js';
import { VideoPoller } from './video/poller.js';
import { VideoService } from './video/service.js';
import { Uploads } from './video/uploads.js';
import { videoCapabilities, videoVendors } from './video/vendors/registry.js';

/** What the video side is built from: the services every feature shares. */
export interface VideoServiceDeps {
  store: Store;
  catalog: Catalog;
  client: UpstreamClient;
  limiter: RateLimiter;
  clock: Clock;
  logger: Logger;
  /** The id-sealing secrets (the last seals new ids and signs output links). */
  idSecrets: string[];
  /** The process-wide budget of upstream answers read whole, shared with fetched media. */
  answerBudget: BodyBudget;
  /** In-flight embeddings and chat spending, which video holds must leave covered. */
  reservations?: Reservations;
  /** What start-up has opened: the media fetcher's pools and the blob store go on it as they open. */
  opened: StartRollback;
}

/** The video service with its poller, and what `close` must close. */
export interface VideoServices {
  video: VideoService;
  poller: VideoPoller;
  media: MediaFetcher;
  blobs: BlobStore & { close?(): void };
  /** Tells the video side the port the server listens on (`serve`, once bound): see Services.listening. */
  listening(port: number): void;
}

/** Builds the video service (media fetcher, blobs, thumbnails, links, uploads, files) and its poller from the config. */
export async function buildVideoServices(cfg: ConfigFile, deps: VideoServiceDeps): Promise<VideoServices> {
  const { store, catalog, client, limiter, clock, logger, idSecrets, answerBudget, reservations, opened } = deps;
  const media = new MediaFetcher({
    allowPrivateNetworks: cfg.video.media.allow_private_networks,
    allowedOrigins: cfg.video.media.allowed_origins,
    maxBytes: cfg.video.media.max_bytes,
    timeoutMs: cfg.video.media.timeout_ms,
    budget: answerBudget,
  });
  opened.add('the media fetcher', () => media.close());
  const ownUrl = listenerUrl(cfg.server.host, cfg.server.port);
  const publicUrl = (cfg.server.public_url ?? ownUrl).replace(/\/+$/, '');
  // On every interface, the listener's own address in a URL is the loopback one (listenerUrl): the
  // operator is told once that clients elsewhere need public_url. (The embedded default sets
  // public_url to that same address, so it is told too.)
  if (publicUrl === ownUrl && isWildcardHost(cfg.server.host)) logger.warn(loopbackUrlsNotice(cfg.server.host));
  const blobs = await blobStoreFor(cfg);
  opened.add('the blob store', () => blobs.close?.());
  const frames = frameExtractorFor(cfg, logger);
  // Looked for once at start, so the models list can say whether the gateway makes thumbnails.
  void frames?.available();
  const capabilities = withGatewayThumbnails(capabilitiesSource(cfg, catalog), frames);
  const links = new LinkSigner(idSecrets, cfg.video.link_ttl_ms);
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
    idempotencyAbandonMs: cfg.server.request_timeout_ms + 30_000,
  };
  const video = new VideoService({
    store,
    catalog,
    client,
    vendors: videoVendors,
    sealer: new IdSealer(idSecrets),
    links,
    blobs,
    // The public URL is read at use: tests (and a port chosen by the OS) settle it after start.
    uploads: new Uploads(blobs, links, () => settings.publicUrl),
    capabilities,
    media,
    frames,
    files: new FilesService(store, blobs, clock, {
      maxBytes: cfg.video.files.max_bytes,
      retentionMs: cfg.video.files.retention_ms,
      quota: { maxBytes: cfg.video.files.account_max_bytes, maxFiles: cfg.video.files.account_max_files },
    }),
    limiter,
    reservations,
    limitDefaults: cfg.limits.defaults.video,
    clock,
    log: logger,
    settings,
  });
  const poller = new VideoPoller(video, cfg.video.refresher_interval_ms, cfg.video.stale_submitting_ms);
  // A public URL that is the listener's own address (the default, or the embedded default's) names
  // the port asked for; with port 0 that is the one the OS chose, known only once bound.
  const listening = (port: number) => {
    if (settings.publicUrl === ownUrl) settings.publicUrl = listenerUrl(cfg.server.host, port);
  };
  return { video, poller, media, blobs, listening };
}

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
