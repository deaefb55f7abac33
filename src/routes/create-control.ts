import type { FastifyReply, FastifyRequest } from 'fastify';
import '../auth/types.js';
import type { IdempotencyClaim } from '../store/idempotency-types.js';
import type { CreateControl } from '../video/create.js';

/**
 * The HTTP request's side of a video create, the same for every create route (the spec's, and the
 * OpenAI Videos API's create and remix): its abort signal and point of no return, its x-request-id,
 * and the admission's x-ratelimit-* headers put on the reply at once, so that whatever the create
 * answers from then on (the job, or a refusal after the admission) describes the limit, as
 * embeddings and chat answers do. A refusal that gives the admission back sets them again, as the
 * give-back left the windows. And the Idempotency-Key the request holds, if it sent one.
 */
export function createControl(req: FastifyRequest, reply: FastifyReply, idempotency?: IdempotencyClaim): CreateControl {
  return {
    idempotency,
    signal: req.abortSignal,
    commit: () => req.commit(),
    requestId: req.id,
    rateLimitHeaders: (headers) => void reply.headers(headers),
  };
}
