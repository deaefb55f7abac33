import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { errors } from '../core/errors.js';
import { webhookView, type WebhookAdmin } from '../webhooks/admin.js';

export const webhookEndpointSchema = z.object({ account: z.string(), url: z.string(), events: z.array(z.string()).max(10).optional() }).strict();

/** Webhook endpoints under /admin (registered inside the admin plugin, so the admin token guards them). */
export function registerWebhookAdminRoutes(admin: FastifyInstance, webhooks: WebhookAdmin): void {
  admin.post('/admin/webhooks', async (req, reply) => {
    const r = webhookEndpointSchema.safeParse(req.body ?? {});
    if (!r.success) {
      const issue = r.error.issues[0]!;
      const param = issue.code === 'unrecognized_keys' ? issue.keys[0] : issue.path.join('.');
      throw errors.invalidRequest(issue.code === 'unrecognized_keys' ? `Unknown field '${param}'.` : `${param}: ${issue.message}`, param || undefined);
    }
    reply.code(201);
    // The secret is in this answer only; it is never shown again.
    return webhookView.endpoint(await webhooks.register(r.data), true);
  });
  admin.get<{ Querystring: { account?: string } }>('/admin/webhooks', async (req) => ({
    data: (await webhooks.list(req.query.account)).map((e) => webhookView.endpoint(e)),
  }));
  admin.get<{ Params: { id: string } }>('/admin/webhooks/:id', async (req) => webhookView.endpoint(await webhooks.endpoint(req.params.id)));
  admin.delete<{ Params: { id: string } }>('/admin/webhooks/:id', async (req) => webhookView.endpoint(await webhooks.disable(req.params.id)));
  admin.get<{ Params: { id: string }; Querystring: { limit?: string } }>('/admin/webhooks/:id/deliveries', async (req) => {
    const limit = Math.min(1000, Math.max(1, Number(req.query.limit ?? 100) || 100));
    const log = await webhooks.deliveries(req.params.id, limit);
    return { data: log.events.map(webhookView.event), attempts: log.attempts.map(webhookView.attempt) };
  });
}
