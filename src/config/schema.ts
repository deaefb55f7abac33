import { z } from 'zod';
import { ADMIN_TOKEN_MIN_LENGTH } from './runtime.js';

/** Config file shape. Money is in currency units here; it is converted to micros once, at load. */
const quota = z.object({ rpm: z.number().int().min(0).optional(), tpm: z.number().int().min(0).optional() }).strict();

const upstreamSchema = z
  .object({
    name: z.string().min(1).regex(/^[A-Za-z0-9._-]+$/, 'use letters, digits, dot, dash or underscore'),
    vendor: z.string().min(1),
    base_url: z.string().url(),
    api_key: z.string().optional(),
    models: z.array(z.string().min(1)).min(1),
    /** Optional mapping of public model names to the names the upstream expects (e.g. Azure deployments). */
    model_map: z.record(z.string()).optional(),
    priority: z.number().int().default(1),
    weight: z.number().positive().default(1),
    timeout_ms: z.number().int().positive().default(30_000),
    enabled: z.boolean().default(true),
  })
  // Vendor-specific keys (project, location, api_version, service_account ...) are kept as options; each
  // vendor's own schema checks them at start (config/upstream-options.ts).
  .passthrough();

/** The keys every upstream has; any other key of an upstream entry is one of its vendor's options. */
export const COMMON_UPSTREAM_KEYS: ReadonlySet<string> = new Set(Object.keys(upstreamSchema.shape));

const priceSchema = z
  .object({
    per_second: z.number().min(0).optional(),
    per_million_input_tokens: z.number().min(0).optional(),
    per_million_output_tokens: z.number().min(0).optional(),
  })
  .strict();

const modelSchema = z
  .object({
    capabilities: z.array(z.enum(['video', 'embedding', 'chat'])).min(1),
    price: priceSchema.default({}),
    owned_by: z.string().optional(),
    description: z.string().optional(),
    /**
     * A chat model's own output limit (tokens per choice). A request without max_tokens holds this
     * much output against the balance, key budget and TPM; a larger cap is held only up to it.
     */
    max_output_tokens: z.number().int().positive().optional(),
    /** Overrides of the vendor's declared video capabilities (each key replaces the declared value). */
    video: z
      .object({
        durations: z.array(z.number().positive()),
        default_seconds: z.number().positive(),
        sizes: z.array(z.string().regex(/^\d+x\d+$/)),
        default_size: z.string().regex(/^\d+x\d+$/),
        resolutions: z.array(z.string().regex(/^\d+p$/)),
        aspect_ratios: z.array(z.string()),
        first_frame: z.boolean(),
        last_frame: z.boolean(),
        references: z.boolean(),
        audio: z.boolean(),
        video_reference: z.boolean(),
        remix: z.boolean(),
        cancel: z.boolean(),
        variants: z.array(z.enum(['video', 'thumbnail', 'spritesheet'])),
        content_ttl_seconds: z.number().int().positive().nullable(),
      })
      .partial()
      .strict()
      .optional(),
  })
  .strict();

export const configSchema = z
  .object({
    server: z
      .object({
        host: z.string().default('127.0.0.1'),
        port: z.number().int().min(0).max(65535).default(8080),
        /** Base URL clients use to reach the gateway (for output_url); defaults to http://host:port. */
        public_url: z.string().url().optional(),
        body_limit_bytes: z.number().int().positive().default(10 * 1024 * 1024),
        /** Request-body bytes held by requests in flight, process-wide; beyond it new requests get 503 overloaded. */
        max_inflight_body_bytes: z.number().int().positive().default(64 * 1024 * 1024),
        /** Upstream answers read whole (embeddings, chat, vendor JSON, fetched media) held by requests in flight, process-wide. */
        max_inflight_answer_bytes: z.number().int().positive().default(256 * 1024 * 1024),
        /** Largest single upstream answer read whole; a larger one is refused with 502 `upstream_answer_too_large`. */
        max_answer_bytes: z.number().int().positive().default(64 * 1024 * 1024),
        request_timeout_ms: z.number().int().positive().default(120_000),
        /** On SIGTERM, how long requests in flight get to finish before the process exits anyway. */
        shutdown_timeout_ms: z.number().int().positive().default(25_000),
        /** A client that has not sent its full request head by then is answered 408 and closed (slow headers). */
        headers_timeout_ms: z.number().int().positive().default(15_000),
        /**
         * Which X-Forwarded-* entries to believe. The client address they give keys the sign-in limits, so
         * `true` (believe every entry, including those the client wrote itself) is refused: false (none,
         * the default), the number of proxies in front of the gateway, or those proxies' addresses/CIDRs.
         */
        trust_proxy: z
          .union([z.boolean(), z.number(), z.string(), z.array(z.string())])
          .superRefine((v, ctx) => {
            if (v === false) return;
            if (v === true) {
              ctx.addIssue({
                code: 'custom',
                message:
                  'true would believe every X-Forwarded-For entry, including the ones a client writes itself, so any client could pick its own address; ' +
                  'set the number of proxies in front of the gateway (e.g. 1) or their addresses (e.g. ["127.0.0.1"]), or false when clients connect directly',
              });
              return;
            }
            if (typeof v === 'number') {
              if (!Number.isInteger(v) || v < 1 || v > 16)
                ctx.addIssue({ code: 'custom', message: 'a hop count must be a whole number from 1 to 16 (the proxies in front of the gateway); false for none' });
              return;
            }
            const list = typeof v === 'string' ? v.split(',').map((a) => a.trim()) : v;
            if (list.length === 0) ctx.addIssue({ code: 'custom', message: 'list at least one proxy address, or set false' });
            list.forEach((a, i) => {
              const named = a === 'loopback' || a === 'linklocal' || a === 'uniquelocal';
              if (!named && !z.string().ip().safeParse(a).success && !z.string().cidr().safeParse(a).success)
                ctx.addIssue({
                  code: 'custom',
                  path: typeof v === 'string' ? [] : [i],
                  message: `'${a.slice(0, 60)}' is not an IP address, a CIDR range (10.0.0.0/8) or one of loopback, linklocal, uniquelocal`,
                });
            });
          })
          .transform((v): false | number | string[] => (typeof v === 'string' ? v.split(',').map((a) => a.trim()) : (v as false | number | string[])))
          .default(false),
      })
      .strict()
      .refine((s) => s.max_inflight_body_bytes >= s.body_limit_bytes, {
        message: 'must be at least server.body_limit_bytes (or no body of the largest accepted size could ever be received)',
        path: ['max_inflight_body_bytes'],
      })
      .refine((s) => s.max_inflight_answer_bytes >= s.max_answer_bytes, {
        message: 'must be at least server.max_answer_bytes (or no answer of the largest accepted size could ever be read)',
        path: ['max_inflight_answer_bytes'],
      })
      .default({}),
    database: z.string().default('sqlite:./data/gateway.db'),
    data_dir: z.string().default('./data'),
    /** One secret, or a list for rotation (the last seals new ids). Generated into the data dir when absent. */
    secret: z.union([z.string(), z.array(z.string())]).optional(),
    /** Long enough that guessing it (10 tries a minute per address) is hopeless; generated (43 characters) when absent. */
    admin_token: z
      .string()
      .min(ADMIN_TOKEN_MIN_LENGTH, 'must be at least 24 characters: use a long random value (e.g. `openssl rand -base64 32`), or leave it unset to have one generated into data_dir/admin-token')
      .optional(),
    log_level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    limits: z
      .object({
        backend: z.enum(['memory', 'redis']).default('memory'),
        redis_url: z.string().optional(),
        defaults: z
          .object({
            embeddings: quota.default({ rpm: 3000, tpm: 1_000_000 }),
            chat: quota.default({ rpm: 600, tpm: 200_000 }),
            video: quota.default({ rpm: 60 }),
          })
          .strict()
          .default({}),
      })
      .strict()
      .default({}),
    chat: z
      .object({
        /**
         * Output tokens (per choice) a chat request without max_tokens holds against the balance, the
         * key budget and TPM when its model declares no max_output_tokens; 0 holds none. 4,096 is the
         * output limit many chat models long had and far above a typical answer, so an ordinary
         * request is not refused for it, while parallel uncapped requests can no longer spend past
         * the balance by all their output (see docs/spend.md).
         */
        default_output_reserve_tokens: z.number().int().min(0).default(4_096),
      })
      .strict()
      .default({}),
    video: z
      .object({
        /** A client GET refreshes from the upstream at most this often per job. */
        poll_interval_ms: z.number().int().min(0).default(5_000),
        /** How often the background refresher looks for due jobs; 0 disables it. */
        refresher_interval_ms: z.number().int().min(0).default(2_000),
        /**
         * Vendor-callback-driven refreshes of one job per minute, across every instance sharing the
         * limiter (Redis); 0 = no shared limit (each instance still refreshes a job at most once a second).
         */
        callback_refreshes_per_minute: z.number().int().min(0).default(20),
        /** A job still processing after this long fails at no charge. */
        deadline_ms: z.number().int().positive().default(3 * 60 * 60 * 1000),
        lease_ms: z.number().int().positive().default(30_000),
        /**
         * A job still 'submitting' this long after its create began belongs to a process that died
         * mid-create: its hold is released and it is recorded for reconciliation. Must exceed the
         * longest create (every candidate's timeout_ms).
         */
        stale_submitting_ms: z.number().int().positive().default(15 * 60 * 1000),
        /** Lifetime of signed output_url links. */
        link_ttl_ms: z.number().int().positive().default(24 * 60 * 60 * 1000),
        media: z
          .object({
            /** Allow fetching client media from any private/loopback/link-local address (tests only). */
            allow_private_networks: z.boolean().default(false),
            /** Origins (scheme://host:port) fetched even when private; the embedded default lists its simulators. */
            allowed_origins: z.array(z.string().url()).default([]),
            max_bytes: z.number().int().positive().default(20 * 1024 * 1024),
            timeout_ms: z.number().int().positive().default(15_000),
          })
          .strict()
          .default({}),
        /** Files clients upload as input_reference (POST /v1/videos multipart). */
        uploads: z
          .object({
            max_bytes: z.number().int().positive().default(10 * 1024 * 1024),
            /** A video input_reference (MP4, MOV, WebM) for models that take one. */
            max_video_bytes: z.number().int().positive().default(50 * 1024 * 1024),
            max_video_seconds: z.number().positive().default(60),
            /** Kept this long after the job settles (vendors may fetch late), then removed. */
            retention_ms: z.number().int().min(0).default(60 * 60 * 1000),
          })
          .strict()
          .default({}),
        /** OpenAI Files API uploads (POST /v1/files), usable as a video create's input_reference {file_id}. */
        files: z
          .object({
            max_bytes: z.number().int().positive().default(64 * 1024 * 1024),
            /** Removed this long after upload (a shorter expires_after wins). */
            retention_ms: z.number().int().positive().default(30 * 24 * 60 * 60 * 1000),
          })
          .strict()
          .default({}),
        /** Thumbnails the gateway extracts with ffmpeg for vendors that make none. */
        thumbnails: z
          .object({
            /** false: such thumbnails stay unavailable (404 variant_unavailable). */
            enabled: z.boolean().default(true),
            ffmpeg_path: z.string().min(1).default('ffmpeg'),
            concurrency: z.number().int().positive().default(2),
            queue_limit: z.number().int().min(0).default(16),
            timeout_ms: z.number().int().positive().default(30_000),
            max_input_bytes: z.number().int().positive().default(512 * 1024 * 1024),
            max_output_bytes: z.number().int().positive().default(2 * 1024 * 1024),
          })
          .strict()
          .default({}),
        /** Where uploads and inline vendor outputs are kept: data_dir/videos, or S3-compatible storage shared by every instance. */
        blobs: z
          .discriminatedUnion('backend', [
            z.object({ backend: z.literal('local') }).strict(),
            z
              .object({
                backend: z.literal('s3'),
                bucket: z.string().min(1),
                prefix: z.string().default(''),
                endpoint: z.string().url().optional(),
                region: z.string().default('us-east-1'),
                force_path_style: z.boolean().default(false),
                access_key_id: z.string().optional(),
                secret_access_key: z.string().optional(),
              })
              .strict(),
          ])
          .default({ backend: 'local' }),
      })
      .strict()
      .default({}),
    /** Prometheus metrics: on the main port behind the admin token, or on `port` (no token; bind it privately). */
    metrics: z
      .object({
        enabled: z.boolean().default(true),
        host: z.string().default('127.0.0.1'),
        port: z.number().int().min(0).max(65535).optional(),
      })
      .strict()
      .default({}),
    /** OpenTelemetry traces; also turned on by the standard OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT variables. */
    tracing: z
      .object({
        enabled: z.boolean().default(false),
        /** OTLP/HTTP traces URL, e.g. http://collector:4318/v1/traces (default: the OTEL_* variables). */
        endpoint: z.string().url().optional(),
        service_name: z.string().min(1).default('video-embeddings-gateway'),
        /** Share of new traces recorded; a caller's sampled traceparent is always followed. */
        sample_ratio: z.number().min(0).max(1).default(1),
      })
      .strict()
      .default({}),
    webhooks: z
      .object({
        /** Deliver to private/loopback/link-local addresses (tests, a receiver on the same host). */
        allow_private_networks: z.boolean().default(false),
        /** How often each instance looks at the outbox; 0 disables delivery on this instance. */
        interval_ms: z.number().int().min(0).default(1_000),
        concurrency: z.number().int().min(1).max(256).default(8),
        /** Deliveries in flight at once to one receiver (host:port), per instance. */
        per_origin_concurrency: z.number().int().min(1).max(256).default(4),
        /** Deliveries in flight at once for one account, per instance: no account can take every slot. */
        per_account_concurrency: z.number().int().min(1).max(256).default(2),
        timeout_ms: z.number().int().positive().default(10_000),
        /** Must be at least 2 * timeout_ms + 5 s: an attempt (with its bookkeeping) ends well within its lease. */
        lease_ms: z.number().int().positive().default(60_000),
        /** First retry after this long, doubling (with jitter) up to max_delay_ms. */
        retry_base_ms: z.number().int().positive().default(30_000),
        max_delay_ms: z.number().int().positive().default(4 * 60 * 60 * 1000),
        max_attempts: z.number().int().min(1).max(50).default(12),
        /** Days a finished delivery (delivered or failed) and its attempt log are kept; 0 keeps them for ever. */
        retention_days: z.number().int().min(0).max(3650).default(30),
      })
      .strict()
      .refine((w) => w.lease_ms >= 2 * w.timeout_ms + 5_000, {
        message:
          'must be at least 2 * webhooks.timeout_ms + 5000 (otherwise an attempt still in flight can lose its lease and another instance sends the same event at the same time)',
        path: ['lease_ms'],
      })
      .default({}),
    upstreams: z.array(upstreamSchema).default([]),
    models: z.record(modelSchema).default({}),
  })
  .strict();

export type ConfigFile = z.infer<typeof configSchema>;
export type UpstreamConfig = z.infer<typeof upstreamSchema>;
export type ModelConfig = z.infer<typeof modelSchema>;
