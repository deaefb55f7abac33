import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { Authorizer } from '../auth/authorize.js';
import { errors } from '../core/errors.js';
import { isObject } from '../core/json.js';
import type { EmbeddingsService } from '../embeddings/service.js';

/**
 * POST /v1/embeddings (spec 4.4). Thin: authorize the model, hand the body to the service, send what
 * it returns. The body is sent as a string or as the upstream's bytes, never re-serialised here.
 */
export function registerEmbeddingsRoutes(
  app: FastifyInstance,
  deps: { authorizer: Authorizer; embeddings: EmbeddingsService },
): void {
  app.post('/v1/embeddings', { config: { keyAction: 'embeddings' } }, async (request, reply) => {
    const body = request.body;
    if (!isObject(body)) throw errors.invalidRequest('The request body must be a JSON object.');
    const model = deps.authorizer.model(request.auth, 'embeddings', body['model'], 'embedding');

    // The request's signal aborts the upstream calls when the client hangs up or the request times out.
    const result = await deps.embeddings.create(request.auth, model, body, request.callSignal, request.id);
    reply.headers(result.headers);
    if (!reply.hasHeader('x-request-id')) reply.header('x-request-id', result.requestId);
    reply.type('application/json');
    const answer = result.body;
    if (!Array.isArray(answer)) return reply.send(answer);
    // A large answer in the pieces it was made in: written one after the other, never copied into one.
    let length = 0;
    for (const piece of answer) length += piece.length;
    reply.header('content-length', length);
    return reply.send(Readable.from(answer, { objectMode: false }));
  });
}
