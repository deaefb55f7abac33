import type { FastifyInstance } from 'fastify';
import type { Authorizer } from '../auth/authorize.js';
import { errors } from '../core/errors.js';
import { sendDownload } from '../http/download.js';
import { isObject } from '../core/json.js';
import { createControl } from './create-control.js';
import { idempotent } from './idempotency.js';
import type { VideoService } from '../video/service.js';

export function registerVideoRoutes(app: FastifyInstance, deps: { authorizer: Authorizer; video: VideoService; downloadStallMs?: number }): void {
  app.post('/v1/videos/generations', { config: { keyAction: 'video' } }, async (req, reply) => {
    const body = req.body;
    if (!isObject(body)) throw errors.invalidRequest('The request body must be a JSON object.', undefined, 'invalid_body');
    return idempotent(req, reply, deps.video, { fields: body }, async (claim) => {
      const model = deps.authorizer.model(req.auth, 'video', body.model, 'video');
      const job = await deps.video.create(req.auth, model, body, createControl(req, reply, claim));
      reply.code(200);
      return job;
    });
  });

  app.get<{ Params: { id: string } }>('/v1/videos/:id', { config: { keyAction: 'video' } }, async (req, reply) => {
    const json = await deps.video.getJson(req.auth, req.params.id);
    // Already JSON text (the content type Fastify gives a serialized object).
    reply.type('application/json; charset=utf-8');
    return json;
  });

  app.get<{ Params: { id: string }; Querystring: { index?: string; variant?: string } }>(
    '/v1/videos/:id/content',
    { config: { signedLinks: true, keyAction: 'video' } },
    async (req, reply) => {
      // Either a bearer key with the video action (checked with the key), or a valid signed output_url.
      const accountId = req.auth ? req.auth.account.id : req.signedAccountId;
      if (!accountId) throw errors.unauthenticated();
      const index = req.query.index === undefined ? 0 : Number(req.query.index);
      if (!Number.isInteger(index) || index < 0 || index > 16) throw errors.invalidRequest("'index' must be a small non-negative integer.", 'index');
      const variant = req.query.variant ?? 'video';
      const out = await deps.video.content({ accountId, key: req.auth?.key }, req.params.id, { index, variant, range: req.headers.range, signal: req.abortSignal });
      // A long download is not a timed-out request: once bytes flow, it runs to its end.
      req.commit();
      // Bytes from a vendor, served from the gateway's origin: a browser must keep to the declared type.
      reply.code(out.status).headers(out.headers).header('x-content-type-options', 'nosniff');
      return sendDownload(reply, out.body, deps.downloadStallMs);
    },
  );
}
