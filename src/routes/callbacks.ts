import type { FastifyInstance } from 'fastify';
import { errors } from '../core/errors.js';
import type { ShutdownState } from '../http/shutdown-state.js';
import type { VideoService } from '../video/service.js';

/** Vendors' callback payloads are small task objects; anything larger is not a callback. */
const CALLBACK_BODY_LIMIT = 64 * 1024;

/**
 * POST /callbacks/video/{token}: a vendor says a task changed. The body is neither trusted nor
 * needed: the gateway refreshes the job from the vendor over its authenticated API, so a forged or
 * replayed callback can cause at most an early poll (rate-limited per job). Where the vendor signs
 * its callbacks (fal's ED25519 webhooks) the signature is checked over the exact bytes received,
 * which is why this route keeps the body raw instead of parsing it.
 */
export function registerCallbackRoutes(app: FastifyInstance, deps: { video: VideoService; shutdown?: ShutdownState }): void {
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: CALLBACK_BODY_LIMIT }, (_req, body, done) => done(null, body));
    scope.post<{ Params: { token: string }; Body: Buffer | undefined }>('/callbacks/video/:token', { bodyLimit: CALLBACK_BODY_LIMIT }, async (req) => {
      // A draining instance starts no new refresh: the vendor retries (elsewhere), or polling settles the job.
      if (deps.shutdown?.isShuttingDown()) throw errors.shuttingDown();
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const verdict = await deps.video.vendorCallback(req.params.token, { headers: req.headers, body });
      if (verdict === 'unknown') throw errors.notFound('Unknown callback.', 'callback_not_found');
      if (verdict === 'refused') throw errors.invalidCallbackSignature();
      return { received: true };
    });
  });
}
