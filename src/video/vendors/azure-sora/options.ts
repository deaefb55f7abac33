import { z } from 'zod';

/** Azure OpenAI Sora (jobs API) upstream options (README.md, "up.options"), checked at start. */
export const azureSoraOptionsSchema = z
  .object({
    api_version: z.string().min(1).optional(),
    deployments: z.record(z.string().min(1)).optional(),
    default_size: z.string().regex(/^\d+\s*[x*]\s*\d+$/i, 'must be "WIDTHxHEIGHT", e.g. "1280x720"').optional(),
  })
  .strict();
