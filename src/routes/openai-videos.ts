import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Authorizer } from '../auth/authorize.js';
import { errors } from '../core/errors.js';
import { sendDownload } from '../http/download.js';
import { createControl } from './create-control.js';
import { acceptEmptyJsonBody } from './empty-json-body.js';
import { readForm, type ParsedForm } from './openai-form.js';
import { idempotent } from './idempotency.js';
import type { IdempotencyClaim } from '../store/idempotency-types.js';
import { acceptMultipartForms } from './multipart-form.js';
import { registerDeriveRoutes } from './openai-video-derive.js';
import { isObject, type JsonObject } from '../core/json.js';
import { OPENAI_DEFAULT_MODEL, toSpecBody } from '../video/openai/request.js';
import { base64CopyBytes, prepareUpload, readReferencedFile, referencedFile } from '../video/openai/upload.js';
import { VideoAdmission } from '../video/create-admission.js';
import type { VideoService } from '../video/service.js';

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
    acceptMultipartForms(scope);

    // The key's action is checked before the body is read: a key that may not create videos neither
    // uploads nor learns what its form got wrong.
    scope.post('/v1/videos', { config: { keyAction: 'video' } }, async (req, reply) => {
      const parsed = await readForm(req, reply, maxUpload, 'input_reference');
      return idempotent(req, reply, deps.video, parsed, (claim) => create(req, reply, parsed, claim));
    });

    registerDeriveRoutes(scope, deps, maxUpload);
  });

  /** POST /v1/videos once its form is read: a create, with an uploaded or stored input_reference when there is one. */
  async function create(req: FastifyRequest, reply: FastifyReply, parsed: ParsedForm, claim: IdempotencyClaim | undefined): Promise<JsonObject> {
    const fields: JsonObject = { ...parsed.fields };
    const model = deps.authorizer.model(req.auth, 'video', fields.model ?? OPENAI_DEFAULT_MODEL, 'video');
    const stored = await referencedFile(deps.video.deps, req.auth, fields);
    if (stored && parsed.file) throw errors.invalidRequest("Send 'input_reference' once: as a file or as a reference, not both.", 'input_reference');
    if (stored) delete fields.input_reference;
    const control = createControl(req, reply, claim);
    if (!stored && !parsed.file) return deps.video.create(req.auth, model, toSpecBody(fields, undefined), control, { dialect: 'openai' });

    // A stored file is read into memory only for a create the rate limit admits, so the admission
    // comes first. The create takes it over where it would have admitted; a refusal before that
    // (the file, the form, no upstream for the model, the store) did no work and gives it back.
    const admitted = stored ? await VideoAdmission.admit(deps.video.deps, req.auth, control) : undefined;
    try {
      const file = parsed.file ?? (await readReferencedFile(deps.video.deps, stored!, (bytes) => reply.takeHeldBytes(bytes)));
      // The file's base64 copy for the vendor is held until the create is over, whether or not
      // the client stays: taken before anything is stored, given back once the create ends.
      const releaseCopy = reply.holdBytes(base64CopyBytes(file));
      if (!releaseCopy) throw errors.overloaded();
      try {
        const prepared = await prepareUpload(deps.video.deps, req.auth, model.name, fields, file);
        try {
          return await deps.video.create(req.auth, model, prepared.spec, control, { dialect: 'openai', uploads: prepared.uploads, prefetched: prepared.prefetched, admitted });
        } catch (e) {
          // No job took the upload (a refusal, or a create no upstream accepted): nothing may keep it.
          for (const name of prepared.uploads) await deps.video.deps.blobs.delete(name).catch(() => undefined);
          throw e;
        }
      } finally {
        releaseCopy();
      }
    } catch (e) {
      await admitted?.giveBackUnlessTakenOver();
      throw e;
    }
  }

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
    return idempotent(req, reply, deps.video, { params: { id: req.params.id }, fields: body }, async (claim) => {
      const source = await deps.video.remixSource(req.auth, req.params.id);
      const model = deps.authorizer.model(req.auth, 'video', source.model, 'video');
      const spec: JsonObject = { model: source.model, prompt: body.prompt ?? null };
      if (typeof source.request.size === 'string') spec.size = source.request.size;
      return deps.video.create(req.auth, model, spec, createControl(req, reply, claim), { dialect: 'openai', remixOf: source });
    });
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

