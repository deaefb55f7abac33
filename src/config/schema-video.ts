import { z } from 'zod';
import { LARGEST_VIDEO_BYTES } from '../video/largest-video.js';
import { spanMs, timerMs } from './durations.js';

/** The config's `video` section: polling, deadlines, media, uploads, files, thumbnails and blob storage. */
export const videoSchema = z
  .object({
    /** A client GET refreshes from the upstream at most this often per job. */
    poll_interval_ms: timerMs().min(0).default(5_000),
    /** How often the background refresher looks for due jobs; 0 disables it. */
    refresher_interval_ms: timerMs().min(0).default(2_000),
    /**
     * Vendor-callback-driven refreshes of one job per minute, across every instance sharing the
     * limiter (Redis); 0 = no shared limit (each instance still refreshes a job at most once a second).
     */
    callback_refreshes_per_minute: z.number().int().min(0).default(20),
    /** A job still processing after this long fails at no charge. */
    deadline_ms: timerMs().positive().default(3 * 60 * 60 * 1000),
    lease_ms: timerMs().positive().default(30_000),
    /**
     * A job still 'submitting' this long after its create began belongs to a process that died
     * mid-create: its hold is released and it is recorded for reconciliation. Must exceed the
     * longest create (every candidate's timeout_ms).
     */
    stale_submitting_ms: timerMs().positive().default(15 * 60 * 1000),
    /** Lifetime of signed output_url links. */
    link_ttl_ms: spanMs().positive().default(24 * 60 * 60 * 1000),
    media: z
      .object({
        /** Allow fetching client media from any private/loopback/link-local address (tests only). */
        allow_private_networks: z.boolean().default(false),
        /** Origins (scheme://host:port) fetched even when private; the embedded default lists its simulators. */
        allowed_origins: z.array(z.string().url()).default([]),
        max_bytes: z.number().int().positive().default(20 * 1024 * 1024),
        timeout_ms: timerMs().positive().default(15_000),
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
        retention_ms: spanMs().min(0).default(60 * 60 * 1000),
      })
      .strict()
      .default({}),
    /** OpenAI Files API uploads (POST /v1/files), usable as a video create's input_reference {file_id}. */
    files: z
      .object({
        max_bytes: z.number().int().positive().default(64 * 1024 * 1024),
        /** Removed this long after upload (a shorter expires_after wins). */
        retention_ms: spanMs().positive().default(30 * 24 * 60 * 60 * 1000),
        /**
         * The bytes of one account's live files together (files, not uploads: storage is not billed,
         * so this, not the balance, bounds what an account can keep on disk); 0 = no limit.
         */
        account_max_bytes: z.number().int().min(0).default(1024 * 1024 * 1024),
        /** How many live files one account may keep; 0 = no limit. */
        account_max_files: z.number().int().min(0).default(1_000),
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
        timeout_ms: timerMs().positive().default(30_000),
        max_input_bytes: z.number().int().positive().default(LARGEST_VIDEO_BYTES),
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
  .default({});
