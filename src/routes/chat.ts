import type { FastifyInstance } from 'fastify';
import type { Authorizer } from '../auth/authorize.js';
import type { ChatResult, ChatService } from '../chat/service.js';
import { errors } from '../core/errors.js';
import { isObject } from '../core/json.js';

export interface ChatRouteDeps {
  authorizer: Authorizer;
  chat: ChatService;
}

/** POST /v1/chat/completions: OpenAI-compatible, streaming (SSE) or not. */
export function registerChatRoutes(app: FastifyInstance, deps: ChatRouteDeps): void {
  app.post('/v1/chat/completions', async (request, reply) => {
    const body = request.body;
    if (!isObject(body)) throw errors.invalidRequest('The request body must be a JSON object.');
    const model = deps.authorizer.model(request.auth, 'chat', body.model, 'chat');

    // A client that hangs up should not keep an upstream generating (and billing) for nobody.
    const abort = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) abort.abort();
    };
    reply.raw.once('close', onClose);

    let result: ChatResult;
    try {
      result = await deps.chat.create(request.auth, model, body, abort.signal);
    } catch (e) {
      reply.raw.off('close', onClose);
      // Nobody is left to read an answer; say so in the log rather than as an upstream failure.
      if (abort.signal.aborted) throw errors.requestTimeout('The client closed the connection before the answer was ready.');
      throw e;
    }
    if (result.kind === 'json') {
      reply.raw.off('close', onClose);
      return reply.code(result.status).headers(result.headers).type('application/json').send(result.body);
    }
    // From the first byte on the response is ours to write: events go out as they arrive.
    reply.hijack();
    try {
      await result.relay(reply.raw);
    } finally {
      reply.raw.off('close', onClose);
    }
    return reply;
  });
}
