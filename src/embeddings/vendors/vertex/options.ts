import { z } from 'zod';
import { googleAuthOptions, vertexLocationOptions } from '../../../protocols/google/options.js';
import { embeddingsServiceOptions } from '../../upstream-options.js';

/** Vertex AI embeddings upstream options (adapter.ts header), checked at start. */
export const vertexOptionsSchema = z
  .object({
    ...vertexLocationOptions,
    ...googleAuthOptions,
    ...embeddingsServiceOptions,
    max_batch: z.number().int().positive().optional(),
    auto_truncate: z.boolean().optional(),
  })
  .strict();
