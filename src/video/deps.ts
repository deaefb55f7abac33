import type { Reservations } from '../billing/reservations.js';
import type { Clock } from '../core/clock.js';
import type { IdSealer } from '../core/sealed-id.js';
import type { MediaFetcher } from '../http/media.js';
import type { Quota, RateLimiter } from '../limits/types.js';
import type { Catalog } from '../routing/catalog.js';
import type { Store } from '../store/types.js';
import type { BlobStore } from './blobs.js';
import type { VideoCapabilities } from './capabilities.js';
import type { FilesService } from '../files/service.js';
import type { FrameExtractor } from './frames.js';
import type { Uploads } from './uploads.js';
import type { UpstreamClient } from '../http/upstream-client.js';
import type { LinkSigner } from './links.js';
import type { VideoVendor } from './types.js';

export interface Log {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface VideoSettings {
  pollIntervalMs: number;
  deadlineMs: number;
  leaseMs: number;
  /** Base URL clients reach the gateway at, for output_url. */
  publicUrl: string;
  /** Largest accepted upload (input_reference file). */
  uploadMaxBytes: number;
  /** Largest video input_reference, and its longest duration. */
  uploadVideoMaxBytes: number;
  uploadVideoMaxSeconds: number;
  /** Uploads are removed this long after their job settles. */
  uploadRetentionMs: number;
  /**
   * Register the gateway's own callback URL with vendors that can call back: only when publicUrl is
   * one a vendor can reach (server.public_url set, or the embedded default's loopback simulators).
   */
  vendorCallbacks?: boolean;
  /** Callback-driven refreshes per job per minute across instances (the shared limiter); 0 = none. */
  callbackRefreshesPerMinute?: number;
  /**
   * How long an Idempotency-Key whose request has made no job yet blocks repeats (409) before its
   * request is taken for dead: past the request's own deadline, after which it makes no job.
   */
  idempotencyAbandonMs?: number;
  /** A per-job gateway_webhook_url may point at a private address (tests, same-host receivers). */
  allowPrivateWebhooks?: boolean;
}

/** Everything the video services need, built once at start. */
export interface VideoDeps {
  store: Store;
  catalog: Catalog;
  client: UpstreamClient;
  vendors: ReadonlyMap<string, VideoVendor>;
  sealer: IdSealer;
  links: LinkSigner;
  blobs: BlobStore;
  uploads: Uploads;
  /** The model's capabilities (vendor declaration with the config's override), undefined for a non-video model. */
  capabilities(model: string): VideoCapabilities | undefined;
  media: MediaFetcher;
  /** OpenAI Files API uploads; a create's input_reference {file_id} reads them. */
  files: FilesService;
  /** Makes thumbnails for vendors that make none (ffmpeg); absent: those stay unavailable. */
  frames?: FrameExtractor;
  limiter: RateLimiter;
  /**
   * The process's in-flight embeddings and chat spending: a hold must leave it covered, and their
   * cached balance learns of the hold and of its release (billing/reservations.ts). Absent: the
   * store's check alone.
   */
  reservations?: Pick<Reservations, 'storeHold' | 'releasing'>;
  limitDefaults: Quota;
  clock: Clock;
  log: Log;
  settings: VideoSettings;
}
