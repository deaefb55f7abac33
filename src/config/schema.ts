import { z } from 'zod';
import { timerMs } from './durations.js';
import { ADMIN_TOKEN_MIN_LENGTH, ID_SECRET_MIN_LENGTH } from './runtime.js';
import { modelSchema, upstreamSchema } from './schema-catalog.js';
import { serverSchema } from './schema-server.js';
import { videoSchema } from './schema-video.js';

/** An id-sealing secret: anyone who guesses it can forge and read job ids and output links. */
const idSecret = z
  .string()
  .min(ID_SECRET_MIN_LENGTH, `must be at least ${ID_SECRET_MIN_LENGTH} characters: use a long random value (e.g. \`openssl rand -base64 32\`), or leave it unset to have one generated into data_dir/secret`);

const quota = z.object({ rpm: z.number().int().min(0).optional(), tpm: z.number().int().min(0).optional() }).strict();

/** Config file shape. Money is in currency units here; it is converted to micros once, at load. */
export const configSchema = z
  .object({
    server: serverSchema,
    database: z.string().default('sqlite:./data/gateway.db'),
    data_dir: z.string().default('./data'),
    /** One secret, or a list for rotation (the last seals new ids). Generated into the data dir when absent. */
    secret: z.union([idSecret, z.array(idSecret)]).optional(),
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
    video: videoSchema,
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
        interval_ms: timerMs().min(0).default(1_000),
        concurrency: z.number().int().min(1).max(256).default(8),
        /** Deliveries in flight at once to one receiver (host:port), per instance. */
        per_origin_concurrency: z.number().int().min(1).max(256).default(4),
        /** Deliveries in flight at once for one account, per instance: no account can take every slot. */
        per_account_concurrency: z.number().int().min(1).max(256).default(2),
        timeout_ms: timerMs().positive().default(10_000),
        /** Must be at least 2 * timeout_ms + 5 s: an attempt (with its bookkeeping) ends well within its lease. */
        lease_ms: timerMs().positive().default(60_000),
        /** First retry after this long, doubling (with jitter) up to max_delay_ms. */
        retry_base_ms: timerMs().positive().default(30_000),
        max_delay_ms: timerMs().positive().default(4 * 60 * 60 * 1000),
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
