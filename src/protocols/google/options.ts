import { z } from 'zod';
import { parseServiceAccount } from './oauth.js';

/**
 * Google credentials as upstream options, shared by every Vertex AI vendor (read at run time by
 * `googleAuthOptionsFrom`). An inline service-account key is checked at start with the same rules the
 * token exchange applies, so a key without `client_email` or `private_key` stops the gateway from starting
 * instead of failing every call.
 */
export const googleAuthOptions = {
  access_token: z.string().optional(),
  service_account: z
    .union([z.record(z.unknown()), z.string()])
    .superRefine((v, ctx) => {
      try {
        parseServiceAccount(v, 'service_account');
      } catch (e) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: (e as Error).message });
      }
    })
    .optional(),
  key_file: z.string().optional(),
};

/** Vertex AI's addressing: the project is required, the location defaults per vendor. */
export const vertexLocationOptions = {
  project: z.string().min(1, 'the Google Cloud project is required'),
  location: z.string().min(1).optional(),
};
