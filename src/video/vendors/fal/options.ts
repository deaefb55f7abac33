import { z } from 'zod';

/** fal.ai queue upstream options (README.md, "up.options"), checked at start. */
export const falOptionsSchema = z
  .object({
    trusted_hosts: z.array(z.string().min(1)).optional(),
    duration_formats: z.record(z.enum(['suffix_s', 'string', 'integer'])).optional(),
    object_lifecycle_seconds: z.number().int().positive().optional(),
    no_retry: z.boolean().optional(),
  })
  .strict();
