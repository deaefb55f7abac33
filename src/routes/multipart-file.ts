import type { FastifyReply } from 'fastify';
import { errors } from '../core/errors.js';
import type { FormFile } from './multipart-form.js';

/**
 * The bytes of an uploaded file part, each chunk taken from the process-wide budget of request bytes
 * in flight as it arrives (http/body-budget.ts): each upload is bounded by its own size limit, and
 * together they are bounded by the budget, so many uploads at once are shed with 503 `overloaded`
 * instead of being held until memory runs out. A file over its size limit, or cut short, fails the
 * stream being read here (multipart-form.ts), so this returns only a whole file.
 */
export async function readFilePart(part: FormFile, reply: FastifyReply): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of part.file) {
    const b = chunk as Buffer;
    if (!reply.takeUploadBytes(b.length)) throw errors.overloaded();
    chunks.push(b);
    size += b.length;
  }
  return Buffer.concat(chunks, size);
}
