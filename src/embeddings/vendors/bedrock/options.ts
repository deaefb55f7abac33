import { z } from 'zod';
import { embeddingsServiceOptions } from '../../upstream-options.js';

/** Bedrock upstream options (adapter.ts header), checked at start: SigV4 keys come as a pair. */
export const bedrockOptionsSchema = z
  .object({
    ...embeddingsServiceOptions,
    region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, 'must be an AWS region such as us-east-1').optional(),
    access_key_id: z.string().min(1).optional(),
    secret_access_key: z.string().min(1).optional(),
    session_token: z.string().min(1).optional(),
    bucket_owner: z.string().min(1).optional(),
  })
  .strict()
  .refine((o) => (o.access_key_id === undefined) === (o.secret_access_key === undefined), {
    message: 'access_key_id and secret_access_key go together',
    path: ['secret_access_key'],
  });
