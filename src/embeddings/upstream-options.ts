import { z } from 'zod';

/** Options the embeddings service itself reads from every embeddings upstream (run.ts). */
export const embeddingsServiceOptions = {
  /** Calls in flight to this upstream for one request's batches. */
  concurrency: z.number().int().positive().optional(),
};
