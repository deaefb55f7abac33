import { z } from 'zod';

/** OpenAI Videos API upstream options (README.md, "up.options"), checked at start. */
export const soraOptionsSchema = z
  .object({
    organization: z.string().optional(),
    project: z.string().optional(),
    auth_style: z.enum(['bearer', 'api-key']).optional(),
  })
  .strict();
