import { z } from 'zod';

/** Seedance reads no upstream options: any key beyond the common upstream keys is a mistake. */
export const seedanceOptionsSchema = z.object({}).strict();
