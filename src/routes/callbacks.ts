import type { FastifyInstance } from 'fastify';
import { errors } from '../core/errors.js';
import type { VideoService } from '../video/service.js';

/** Vendors' callback payloads are small task objects; anything larger is not a callback. */
const CALLBACK_BODY_LIMIT = 64 * 1024;

/**
 * POST /callbacks/video/{token}: a vendor says a task changed. The body is neither trusted nor
 * needed: the gateway refreshes the job from the vendor over its authenticated API, so a forged or
 * replayed callback can cause at most an early poll (rate-limited per job). That is also why fal's
 * ED25519 webhook signature is not checked: nothing in the body is used.
 */
export function registerCallbackRoutes(app: FastifyInstance, deps: { video: VideoService }): void {
  app.post<{ Params: { token: string } }>('/callbacks/video/:token', { bodyLimit: CALLBACK_BODY_LIMIT }, async (req) => {
    if (!(await deps.video.vendorCallback(req.params.token))) throw errors.notFound('Unknown callback.', 'callback_not_found');
    return { received: true };
  });
}
