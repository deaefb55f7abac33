import type { FastifyInstance } from 'fastify';
import type { Authorizer } from '../auth/authorize.js';
import type { ChatService } from '../chat/service.js';
import type { ChatResult } from '../chat/types.js';
import { errors } from '../core/errors.js';
import { isObject } from '../core/json.js';

export interface ChatRouteDeps {
  authorizer: Authorizer;
  chat: ChatService;
}

/** POST /v1/chat/completions: OpenAI-compatible, streaming (SSE) or not. */
export function registerChatRoutes(app: FastifyInstance, deps: ChatRouteDeps): void {
  app.post('/v1/chat/completions', { config: { keyAction: 'chat' } }, async (request, reply) => {
    const body = request.body;
    if (!isObject(body)) throw errors.invalidRequest('The request body must be a JSON object.');
    const model = deps.authorizer.model(request.auth, 'chat', body.model, 'chat');

    // The request's signal stops the upstream when the client hangs up or the request times out.
    const signal = request.abortSignal;
    let result: ChatResult;
    try {
      result = await deps.chat.create(request.auth, model, body, signal, request.id, () => request.commit());
    } catch (e) {
      // Nobody is left to read an answer; say so in the log rather than as an upstream failure.
      if (signal.aborted && !reply.sent) throw errors.requestTimeout('The client closed the connection before the answer was ready.');
      throw e;
    }
    if (result.kind === 'json') return reply.code(result.status).headers(result.headers).type('application/json').send(result.body);
    // From the first byte on the response is ours to write: events go out as they arrive.
    request.commit();
    reply.hijack();
    // A shutdown that cuts the stream (http/lifecycle.ts) says so in its last event.
    await result.relay(reply.raw, () => request.requestLife.cutError);
    return reply;
  });
}
