import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../core/errors.js';
import { sendDownload } from '../http/download.js';
import { acceptEmptyJsonBody } from './empty-json-body.js';
import { readFilePart } from './multipart-file.js';
import { acceptMultipartForms, fieldParam, formError, formParts, isMultipartForm, refuseInvalidDeclaredJson } from './multipart-form.js';
import type { FilesService, NewFile } from '../files/service.js';
import { VideoAdmission } from '../video/create-admission.js';
import type { VideoDeps } from '../video/deps.js';

const MAX_FIELDS = 8;

/**
 * The upload form of openai-node's files.create: `file`, `purpose`, `expires_after[anchor|seconds]`,
 * taken only whole (a form cut short before its closing boundary is refused: multipart-form.ts).
 */
async function readUpload(req: FastifyRequest, reply: FastifyReply, maxBytes: number): Promise<NewFile> {
  if (!isMultipartForm(req)) throw errors.invalidRequest('Upload a file as multipart/form-data (fields file and purpose).', undefined, 'unsupported_media_type');
  let file: { bytes: Buffer; filename: string } | undefined;
  let purpose: unknown;
  const expires: Record<string, string> = {};
  try {
    for await (const part of formParts(req, { fileField: 'file', fileSize: maxBytes, fields: MAX_FIELDS, fieldSize: 1024 })) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file') {
          part.file.resume();
          throw errors.invalidRequest(`Unexpected file field '${part.fieldname.slice(0, 100)}'; the file goes in 'file'.`, fieldParam(part.fieldname));
        }
        file = { bytes: await readFilePart(part, reply), filename: part.filename ?? 'file' };
        continue;
      }
      refuseInvalidDeclaredJson(part);
      if (part.fieldname === 'purpose') purpose = part.value;
      else if (part.fieldname === 'expires_after[anchor]' || part.fieldname === 'expires_after[seconds]') expires[part.fieldname.slice(14, -1)] = part.value;
      else throw errors.invalidRequest(`Unknown field '${part.fieldname.slice(0, 100)}'.`, fieldParam(part.fieldname), 'unknown_parameter');
    }
  } catch (e) {
    throw formError(e);
  }
  if (!file) throw errors.invalidRequest("'file' is required.", 'file', 'missing_required_parameter');
  return { ...file, purpose, expiresAfter: Object.keys(expires).length > 0 ? expires : undefined };
}

export interface FileRouteDeps {
  files: FilesService;
  /** The video rate limit, which uploads count against (the key action they need is `video` too). */
  limits: Pick<VideoDeps, 'limiter' | 'limitDefaults'>;
  downloadStallMs?: number;
}

/** OpenAI's Files API (the part its SDKs use to pass a video create an `input_reference: {file_id}`). */
export function registerFileRoutes(app: FastifyInstance, deps: FileRouteDeps): void {
  const maxBytes = deps.files.settings.maxBytes;
  app.register(async (scope) => {
    acceptMultipartForms(scope);
    // Storage is not billed (as on OpenAI, where files cost nothing to keep), so a zero balance does
    // not stop an upload: what bounds an account's files is its storage quota (FilesService), and
    // how fast a key can fill it the video rate limit. The limit, and a quota with no room left,
    // refuse before the body is read. An upload counts against the limit once stored; one refused
    // or failed gives its count back.
    scope.post('/v1/files', { config: { keyAction: 'video' } }, async (req, reply) => {
      const admission = await VideoAdmission.admit(deps.limits, req.auth, { rateLimitHeaders: (h) => void reply.headers(h) });
      try {
        await deps.files.refuseWhenFull(req.auth);
        return await deps.files.create(req.auth, await readUpload(req, reply, maxBytes));
      } catch (e) {
        await admission.giveBack();
        throw e;
      }
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
