import { z } from 'zod';
import { openAiEndpointOptions } from '../../../protocols/openai/options.js';
import { embeddingsServiceOptions } from '../../upstream-options.js';

/** OpenAI-compatible upstream options (adapter.ts header; chat reads the endpoint ones too), checked at start. */
export const openaiOptionsSchema = z
  .object({
    ...openAiEndpointOptions,
    ...embeddingsServiceOptions,
    supports_base64: z.boolean().optional(),
    max_batch: z.number().int().positive().optional(),
    max_batch_tokens: z.number().int().positive().optional(),
  })
  .strict();
