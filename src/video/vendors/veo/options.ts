import { z } from 'zod';
import { googleAuthOptions, vertexLocationOptions } from '../../../protocols/google/options.js';

/** Veo's upstream options (README.md, "Upstream options"), checked at start. */
export const veoOptionsSchema = z
  .object({
    ...vertexLocationOptions,
    ...googleAuthOptions,
    storage_uri: z.string().regex(/^gs:\/\/[^/]+/, 'must be a gs://bucket/prefix URI').optional(),
    storage_base_url: z.string().url().optional(),
    generate_audio: z.boolean().optional(),
    allowed_gcs_buckets: z.union([z.literal('*'), z.array(z.string().min(1)), z.string().min(1)]).optional(),
  })
  .strict();
