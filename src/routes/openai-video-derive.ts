import type { FastifyInstance } from 'fastify';
import type { Authorizer } from '../auth/authorize.js';
import { createCharacter, getCharacter } from '../video/characters.js';
import { deriveVideo, readCharacter } from '../video/openai/derive.js';
import type { VideoService } from '../video/service.js';
import { createControl } from './create-control.js';
import { readForm } from './openai-form.js';
import { idempotent } from './idempotency.js';
import type { JsonObject } from '../core/json.js';

/**
 * OpenAI's video edits, extensions and characters (POST /v1/videos/edits, /v1/videos/extensions,
 * /v1/videos/characters, GET /v1/videos/characters/{id}), registered in the scope that parses
 * multipart forms. Edits and extensions are video jobs like a create (held, polled, billed, read
 * and listed as any other); characters are sealed vendor ids (video/characters.ts).
 */
export function registerDeriveRoutes(scope: FastifyInstance, deps: { authorizer: Authorizer; video: VideoService }, maxUpload: number): void {
  const { video, authorizer } = deps;

  // Each checks the key's action before the body is read (auth/request-gate.ts), as a create does.
  scope.post('/v1/videos/edits', { config: { keyAction: 'video' } }, async (req, reply) => {
    const form = await readForm(req, reply, maxUpload, 'video');
    return idempotent(req, reply, video, form, (claim) => deriveVideo(video, authorizer, req.auth, 'edit', form, createControl(req, reply, claim)));
  });

  scope.post('/v1/videos/extensions', { config: { keyAction: 'video' } }, async (req, reply) => {
    const form = await readForm(req, reply, maxUpload, 'video');
    return idempotent(req, reply, video, form, (claim) => deriveVideo(video, authorizer, req.auth, 'extend', form, createControl(req, reply, claim)));
  });

  scope.post('/v1/videos/characters', { config: { keyAction: 'video' } }, async (req, reply) => {
    const { fields, file } = await readForm(req, reply, maxUpload, 'video');
    const input = readCharacter(video, fields, file);
    // A character has no row to render a repeat from: its sealed id and time are kept, with the
    // name asked for (nothing the vendor said); a repeat answers them without vendor_data.
    const kept = {
      keep: (answer: JsonObject) => ({ id: answer.id ?? null, created_at: answer.created_at ?? null, name: input.name }),
      render: (k: JsonObject) => ({ ...k, vendor_data: {} }),
    };
    return idempotent(req, reply, video, { fields, file }, async () => {
      const model = authorizer.model(req.auth, 'video', input.model, 'video');
      const control = createControl(req, reply);
      return createCharacter(video.deps, req.auth, model, { name: input.name, video: input.video }, { signal: control.signal, rateLimitHeaders: control.rateLimitHeaders });
    }, kept);
  });

  scope.get<{ Params: { id: string } }>('/v1/videos/characters/:id', { config: { keyAction: 'video' } }, async (req, reply) => {
    const control = { signal: req.abortSignal, rateLimitHeaders: (headers: Record<string, string>) => void reply.headers(headers) };
    return getCharacter(video.deps, req.auth, req.params.id, (model) => authorizer.model(req.auth, 'video', model, 'video'), control);
  });
}
