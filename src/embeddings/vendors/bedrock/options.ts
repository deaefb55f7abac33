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
    /**
     * The S3 locations clients may name as image inputs (`s3://bucket/prefix`). Bedrock reads an
     * `s3://` input with the upstream's own AWS identity, so without a list any client could have
     * any object that identity can read embedded; none listed: `s3://` inputs are refused.
     */
    s3_input_prefixes: z.array(z.string().regex(/^s3:\/\/[^/]+(\/.*)?$/, 'must be an s3://bucket[/prefix] location')).optional(),
  })
  .strict()
  .refine((o) => (o.access_key_id === undefined) === (o.secret_access_key === undefined), {
    message: 'access_key_id and secret_access_key go together',
    path: ['secret_access_key'],
  });
