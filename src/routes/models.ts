import type { FastifyInstance } from 'fastify';
import type { Authorizer } from '../auth/authorize.js';
import { errors } from '../core/errors.js';
import type { Catalog, ModelInfo } from '../routing/catalog.js';

/** OpenAI's list shape, holding only what the caller's key and account may use. */
function present(m: ModelInfo, created: number) {
  return { id: m.name, object: 'model', created, owned_by: m.ownedBy, capabilities: m.capabilities };
}

export function registerModelRoutes(app: FastifyInstance, deps: { authorizer: Authorizer; catalog: Catalog; startedAt: number }): void {
  const created = Math.floor(deps.startedAt / 1000);
  app.get('/v1/models', async (req) => {
    deps.authorizer.action(req.auth, 'models');
    return { object: 'list', data: deps.catalog.visibleModels(req.auth.account, req.auth.key).map((m) => present(m, created)) };
  });

  app.get<{ Params: { id: string } }>('/v1/models/:id', async (req) => {
    deps.authorizer.action(req.auth, 'models');
    const visible = deps.catalog.visibleModels(req.auth.account, req.auth.key).find((m) => m.name === req.params.id);
    if (!visible) {
      if (!deps.catalog.model(req.params.id)) throw errors.modelNotFound(req.params.id);
      throw errors.permissionDenied(`This API key may not use the model '${req.params.id}'.`, 'model');
    }
    return present(visible, created);
  });
}
