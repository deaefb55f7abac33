import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errors, isGatewayError } from '../core/errors.js';
import { sendDownload } from '../http/download.js';
import { acceptEmptyJsonBody } from './empty-json-body.js';
import { readFilePart } from './multipart-file.js';
import type { FilesService, NewFile } from '../files/service.js';

const MAX_FIELDS = 8;

/** The upload form of openai-node's files.create: `file`, `purpose`, `expires_after[anchor|seconds]`. */
async function readUpload(req: FastifyRequest, reply: FastifyReply, maxBytes: number): Promise<NewFile> {
  if (!req.isMultipart()) throw errors.invalidRequest('Upload a file as multipart/form-data (fields file and purpose).', undefined, 'unsupported_media_type');
  let file: { bytes: Buffer; filename: string } | undefined;
  let purpose: unknown;
  const expires: Record<string, string> = {};
  try {
    for await (const part of req.parts()) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file') {
          part.file.resume();
          throw errors.invalidRequest(`Unexpected file field '${part.fieldname.slice(0, 100)}'; the file goes in 'file'.`, part.fieldname.slice(0, 100));
        }
        file = { bytes: await readFilePart(part, reply), filename: part.filename ?? 'file' };
        continue;
      }
      const value = typeof part.value === 'string' ? part.value : String(part.value);
      if (part.fieldname === 'purpose') purpose = value;
      else if (part.fieldname === 'expires_after[anchor]' || part.fieldname === 'expires_after[seconds]') expires[part.fieldname.slice(14, -1)] = value;
      else throw errors.invalidRequest(`Unknown field '${part.fieldname.slice(0, 100)}'.`, part.fieldname.slice(0, 100), 'unknown_parameter');
    }
  } catch (e) {
    const code = (e as { code?: string })?.code;
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw errors.uploadTooLarge(maxBytes, 'file');
    if (code === 'FST_FILES_LIMIT') throw errors.invalidRequest('Send one file.', 'file', 'too_many_files');
    if (code === 'FST_FIELDS_LIMIT' || code === 'FST_PARTS_LIMIT') throw errors.invalidRequest('Too many form fields.', undefined, 'too_many_fields');
    if (code === 'FST_PROTO_VIOLATION') throw errors.invalidRequest('A form field name is a forbidden key.', undefined, 'forbidden_key');
    throw isGatewayError(e) ? e : errors.unreadableForm();
  }
  if (!file) throw errors.invalidRequest("'file' is required.", 'file', 'missing_required_parameter');
  return { ...file, purpose, expiresAfter: Object.keys(expires).length > 0 ? expires : undefined };
}

/** OpenAI's Files API (the part its SDKs use to pass a video create an `input_reference: {file_id}`). */
export function registerFileRoutes(app: FastifyInstance, deps: { files: FilesService; downloadStallMs?: number }): void {
  const maxBytes = deps.files.settings.maxBytes;
  app.register(async (scope) => {
    await scope.register(multipart, { limits: { fileSize: maxBytes, files: 1, fields: MAX_FIELDS, parts: MAX_FIELDS + 1, fieldSize: 1024 } });
    scope.post('/v1/files', { config: { keyAction: 'video' } }, async (req, reply) => {
      return deps.files.create(req.auth, await readUpload(req, reply, maxBytes));
    });
  });

  app.get<{ Querystring: { after?: string; limit?: string; order?: string; purpose?: string } }>('/v1/files', { config: { keyAction: 'video' } }, async (req) => {
    return deps.files.list(req.auth, req.query);
  });

  app.get<{ Params: { id: string } }>('/v1/files/:id', { config: { keyAction: 'video' } }, async (req) => {
    return deps.files.get(req.auth, req.params.id);
  });

  // Like videos.delete, an SDK may send DELETE with an empty JSON body: an empty body is no body.
  app.register(async (scope) => {
    acceptEmptyJsonBody(scope);
    scope.delete<{ Params: { id: string } }>('/v1/files/:id', { config: { keyAction: 'video' } }, async (req) => {
      return deps.files.delete(req.auth, req.params.id);
    });
  });

  app.get<{ Params: { id: string } }>('/v1/files/:id/content', { config: { keyAction: 'video' } }, async (req, reply) => {
    const out = await deps.files.content(req.auth, req.params.id);
    // A client's bytes, served from the gateway's origin: a browser must keep to the sniffed type.
    reply.headers(out.headers).header('x-content-type-options', 'nosniff');
    return sendDownload(reply, out.body, deps.downloadStallMs);
  });
}
