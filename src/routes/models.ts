import type { FastifyInstance } from 'fastify';
import { errors } from '../core/errors.js';
import { formatMicros } from '../core/money.js';
import type { Catalog, ModelInfo } from '../routing/catalog.js';
import type { VideoCapabilities } from '../video/capabilities.js';

interface ModelRouteDeps {
  catalog: Catalog;
  startedAt: number;
  videoCapabilities: (model: string) => VideoCapabilities | undefined;
}

export function registerModelRoutes(app: FastifyInstance, deps: ModelRouteDeps): void {
  const created = Math.floor(deps.startedAt / 1000);
  /** OpenAI's model shape; video models add what they accept and can do, so a client can build its form from it. */
  const present = (m: ModelInfo, at: number) => {
    const out: Record<string, unknown> = { id: m.name, object: 'model', created: at, owned_by: m.ownedBy, capabilities: m.capabilities };
    const video = deps.videoCapabilities(m.name);
    if (video) out.video = { ...video, price_per_second: m.price.perSecond !== undefined ? Number(formatMicros(m.price.perSecond)) : null };
    return out;
  };
  app.get('/v1/models', { config: { keyAction: 'models' } }, async (req) => {
    return { object: 'list', data: deps.catalog.visibleModels(req.auth.account, req.auth.key).map((m) => present(m, created)) };
  });

  app.get<{ Params: { id: string } }>('/v1/models/:id', { config: { keyAction: 'models' } }, async (req) => {
    const visible = deps.catalog.visibleModels(req.auth.account, req.auth.key).find((m) => m.name === req.params.id);
    if (!visible) {
      if (!deps.catalog.model(req.params.id)) throw errors.modelNotFound(req.params.id);
      throw errors.permissionDenied(`This API key may not use the model '${req.params.id}'.`, 'model');
    }
    return present(visible, created);
  });
}
