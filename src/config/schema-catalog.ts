import { z } from 'zod';
import { timerMs } from './durations.js';

/** The config's `upstreams` and `models` sections: what routing/catalog.ts is built from. Prices are in currency units. */
export const upstreamSchema = z
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
    timeout_ms: timerMs().positive().default(30_000),
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

export const modelSchema = z
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
        edit: z.boolean(),
        extend: z.boolean(),
        characters: z.boolean(),
        cancel: z.boolean(),
        variants: z.array(z.enum(['video', 'thumbnail', 'spritesheet'])),
        content_ttl_seconds: z.number().int().positive().nullable(),
      })
      .partial()
      .strict()
      .optional(),
  })
  .strict();
