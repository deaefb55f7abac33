import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Authorizer } from '../auth/authorize.js';
import { errors, isGatewayError } from '../core/errors.js';
import { sendDownload } from '../http/download.js';
import { createControl } from './create-control.js';
import { acceptEmptyJsonBody } from './empty-json-body.js';
import { readFilePart } from './multipart-file.js';
import { isObject, type JsonObject } from '../core/json.js';
import { OPENAI_DEFAULT_MODEL, foldFormFields, toSpecBody } from '../video/openai/request.js';
import { fileForReference, prepareUpload } from '../video/openai/upload.js';
import type { VideoService } from '../video/service.js';

const MAX_FORM_FIELDS = 64;
const MAX_FIELD_BYTES = 256 * 1024;

interface ParsedCreate {
  fields: JsonObject;
  file?: Buffer;
}

/** Multipart errors of @fastify/multipart, in the spec's error shape. */
function multipartError(e: unknown, maxBytes: number): unknown {
  const code = (e as { code?: string })?.code;
  if (code === 'FST_REQ_FILE_TOO_LARGE') return errors.uploadTooLarge(maxBytes);
  if (code === 'FST_FILES_LIMIT') return errors.invalidRequest('Send at most one file (input_reference).', 'input_reference', 'too_many_files');
  if (code === 'FST_FIELDS_LIMIT' || code === 'FST_PARTS_LIMIT')
    return errors.invalidRequest(`At most ${MAX_FORM_FIELDS} form fields are accepted.`, undefined, 'too_many_fields');
  if (code === 'FST_PROTO_VIOLATION') return errors.invalidRequest('A form field name is a forbidden key.', undefined, 'forbidden_key');
  if (code === 'FST_INVALID_JSON_FIELD_ERROR') return errors.invalidJson('A form field declared as JSON is not valid JSON.');
  if (isGatewayError(e)) return e;
  // Anything else comes from reading the form itself (no boundary, a malformed part header): the
  // client's mistake, never a 500.
  return errors.unreadableForm();
}

/** The create's fields and its one file, from JSON or from the multipart form the official SDKs send. */
async function readCreate(req: FastifyRequest, reply: FastifyReply, maxBytes: number): Promise<ParsedCreate> {
  if (!req.isMultipart()) {
    if (!isObject(req.body)) throw errors.invalidRequest('The request body must be a JSON object or a multipart form.', undefined, 'invalid_body');
    return { fields: req.body };
  }
  const pairs: [string, string][] = [];
  let file: Buffer | undefined;
  try {
    for await (const part of req.parts()) {
      if (part.type === 'file') {
        if (part.fieldname !== 'input_reference') {
          part.file.resume();
          throw errors.invalidRequest(`Unexpected file field '${part.fieldname.slice(0, 100)}'; the file goes in 'input_reference'.`, part.fieldname.slice(0, 100));
        }
        // Bounded by the plugin's fileSize limit, and with every other upload by the body budget.
        file = await readFilePart(part, reply);
      } else {
        if (part.valueTruncated || part.fieldnameTruncated)
          throw errors.invalidRequest(`Form field '${part.fieldname.slice(0, 100)}' is too long.`, part.fieldname.slice(0, 100));
        const v = part.value;
        const value = typeof v === 'string' ? v : JSON.stringify(v);
        // Fields are held too (up to MAX_FORM_FIELDS of MAX_FIELD_BYTES each): they count like the file.
        if (!reply.takeUploadBytes(part.fieldname.length + value.length)) throw errors.overloaded();
        pairs.push([part.fieldname, value]);
      }
    }
  } catch (e) {
    throw multipartError(e, maxBytes);
  }
  return { fields: foldFormFields(pairs), file };
}

/**
 * OpenAI's Videos API over the same job machinery: create (JSON or multipart with an uploaded
 * input_reference), list, delete, remix. Retrieve and content share the spec's routes
 * (GET /v1/videos/{id} answers each job in the dialect it was created in).
 */
export function registerOpenAiVideoRoutes(app: FastifyInstance, deps: { authorizer: Authorizer; video: VideoService; downloadStallMs?: number }): void {
  const { settings, uploads } = deps.video.deps;
  // Images and videos share the one file field; each kind's own limit is checked once it is sniffed.
  const maxUpload = Math.max(settings.uploadMaxBytes, settings.uploadVideoMaxBytes);

  app.register(async (scope) => {
    await scope.register(multipart, {
      limits: { fileSize: maxUpload, files: 1, fields: MAX_FORM_FIELDS, parts: MAX_FORM_FIELDS + 1, fieldSize: MAX_FIELD_BYTES },
    });

    // The key's action is checked before the body is read: a key that may not create videos neither
    // uploads nor learns what its form got wrong.
    scope.post('/v1/videos', { config: { keyAction: 'video' } }, async (req, reply) => {
      const parsed = await readCreate(req, reply, maxUpload);
      const fields: JsonObject = { ...parsed.fields };
      const model = deps.authorizer.model(req.auth, 'video', fields.model ?? OPENAI_DEFAULT_MODEL, 'video');
      const fromFiles = await fileForReference(deps.video.deps, req.auth, fields);
      if (fromFiles && parsed.file) throw errors.invalidRequest("Send 'input_reference' once: as a file or as a reference, not both.", 'input_reference');
      if (fromFiles) delete fields.input_reference;
      const file = parsed.file ?? fromFiles;
      const control = createControl(req, reply);
      if (!file) return deps.video.create(req.auth, model, toSpecBody(fields, undefined), control, { dialect: 'openai' });

      const prepared = await prepareUpload(deps.video.deps, req.auth, model.name, fields, file);
      try {
        return await deps.video.create(req.auth, model, prepared.spec, control, { dialect: 'openai', uploads: prepared.uploads, prefetched: prepared.prefetched });
      } catch (e) {
        // No job took the upload (a refusal, or a create no upstream accepted): nothing may keep it.
        for (const name of prepared.uploads) await deps.video.deps.blobs.delete(name).catch(() => undefined);
        throw e;
      }
    });
  });

  app.get<{ Querystring: { after?: string; limit?: string; order?: string } }>('/v1/videos', { config: { keyAction: 'video' } }, async (req) => {
    return deps.video.list(req.auth, req.query);
  });

  // The Python SDK sends DELETE with an empty JSON body; an empty body here is no body.
  app.register(async (scope) => {
    acceptEmptyJsonBody(scope);
    scope.delete<{ Params: { id: string } }>('/v1/videos/:id', { config: { keyAction: 'video' } }, async (req) => {
      return deps.video.delete(req.auth, req.params.id);
    });
  });

  app.post<{ Params: { id: string } }>('/v1/videos/:id/remix', { config: { keyAction: 'video' } }, async (req, reply) => {
    const body = req.body;
    if (!isObject(body)) throw errors.invalidRequest('The request body must be a JSON object.', undefined, 'invalid_body');
    const extra = Object.keys(body).find((k) => k !== 'prompt');
    if (extra) throw errors.invalidRequest(`Unknown field '${extra.slice(0, 100)}': a remix takes only 'prompt'.`, extra.slice(0, 100), 'unknown_parameter');
    const source = await deps.video.remixSource(req.auth, req.params.id);
    const model = deps.authorizer.model(req.auth, 'video', source.model, 'video');
    const spec: JsonObject = { model: source.model, prompt: body.prompt ?? null };
    if (typeof source.request.size === 'string') spec.size = source.request.size;
    return deps.video.create(req.auth, model, spec, createControl(req, reply), { dialect: 'openai', remixOf: source });
  });

  // Uploaded inputs, for vendors that fetch them: only through a signed, expiring link (no key).
  app.get<{ Params: { account: string; file: string }; Querystring: { expires?: string; signature?: string } }>('/uploads/:account/:file', async (req, reply) => {
    const name = `uploads/${req.params.account}/${req.params.file}`;
    if (!uploads.verify(name, req.query.expires, req.query.signature, deps.video.deps.clock.now()))
      throw errors.notFound('No such upload, or the link has expired.', 'upload_not_found');
    const size = await deps.video.deps.blobs.size(name);
    const body = size === undefined ? undefined : await deps.video.deps.blobs.open(name);
    if (size === undefined || !body) throw errors.notFound('No such upload, or the link has expired.', 'upload_not_found');
    reply.headers({ 'content-type': uploads.mimeOf(name), 'content-length': String(size), 'x-content-type-options': 'nosniff' });
    return sendDownload(reply, body, deps.downloadStallMs);
  });
}

