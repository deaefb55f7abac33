import { z } from 'zod';

/** Wan (DashScope) upstream options (README.md, "up.options"), checked at start. */
export const wanOptionsSchema = z
  .object({
    workspace: z.string().min(1).optional(),
    oss_resource_resolve: z.boolean().optional(),
  })
  .strict();
