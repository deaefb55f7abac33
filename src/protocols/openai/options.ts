import { z } from 'zod';

/**
 * The OpenAI family's endpoint options (see `endpoint.ts`): Azure's URL forms and OpenAI's organization
 * and project headers. Shared by every upstream that speaks the OpenAI protocol, chat included.
 */
export const openAiEndpointOptions = {
  api_version: z.string().min(1).optional(),
  azure: z.boolean().optional(),
  organization: z.string().optional(),
  project: z.string().optional(),
};
