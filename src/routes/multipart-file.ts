import type { MultipartFile } from '@fastify/multipart';
import type { FastifyReply } from 'fastify';
import { errors } from '../core/errors.js';

/**
 * The bytes of an uploaded file part, each chunk taken from the process-wide budget of request bytes
 * in flight as it arrives (http/body-budget.ts): each upload is bounded by its own size limit, and
 * together they are bounded by the budget, so many uploads at once are shed with 503 `overloaded`
 * instead of being held until memory runs out. A file over the part's size limit is the plugin's
 * FST_REQ_FILE_TOO_LARGE, as from its own toBuffer.
 */
export async function readFilePart(part: MultipartFile, reply: FastifyReply): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of part.file) {
    const b = chunk as Buffer;
    if (!reply.takeUploadBytes(b.length)) throw errors.overloaded();
    chunks.push(b);
    size += b.length;
  }
  if (part.file.truncated) throw Object.assign(new Error('request file too large'), { code: 'FST_REQ_FILE_TOO_LARGE' });
  return Buffer.concat(chunks, size);
}
