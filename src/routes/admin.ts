import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { AdminService, ALL_ACTIONS, view } from '../admin/service.js';
import { adminListKeys, type AdminKeyQuery } from '../admin/key-list.js';
import { adminTokenGuard } from '../auth/admin-token.js';
import { SignInLimiter } from '../console/sign-in-limit.js';
import { errors } from '../core/errors.js';
import type { Clock } from '../core/clock.js';
import type { Store } from '../store/types.js';
import { adminUsage, type AdminUsageQuery } from './usage.js';
import type { WebhookAdmin } from '../webhooks/admin.js';
import { registerWebhookAdminRoutes } from './webhooks.js';
import { parseLedgerQuery, registerAdminConsoleRoutes, type LedgerQuery } from './admin-console.js';
import type { Catalog } from '../routing/catalog.js';
import type { VideoService } from '../video/service.js';

const quota = z.object({ rpm: z.number().int().min(0).optional(), tpm: z.number().int().min(0).optional() }).strict();
const limits = z.object({ embeddings: quota.optional(), chat: quota.optional(), video: quota.optional() }).strict();
const amount = z.union([z.number(), z.string()]);
const budget = z
  .object({ total: amount.nullable().optional(), period: z.enum(['day', 'month']).nullable().optional(), period_limit: amount.nullable().optional() })
  .strict();
/** A key's model patterns: a bounded list, since a key's job list filters on each of them in SQL. */
export const MAX_KEY_MODEL_PATTERNS = 100;
/** The admin request bodies; the OpenAPI document is generated from these same schemas. */
export const adminSchemas = {
  account: z.object({ name: z.string(), balance: amount.optional(), upstreams: z.array(z.string()).nullable().optional(), limits: limits.optional() }).strict(),
  topup: z.object({ amount, note: z.string().max(500).optional() }).strict(),
  key: z
    .object({
      account: z.string(),
      models: z.array(z.string().min(1).max(200)).min(1).max(MAX_KEY_MODEL_PATTERNS).optional(),
      actions: z.array(z.enum(ALL_ACTIONS as [string, ...string[]])).optional(),
      expires: z.string().optional(),
      name: z.string().max(100).optional(),
      limits: limits.optional(),
      budget: budget.nullable().optional(),
    })
    .strict(),
  budget: z.object({ budget: budget.nullable() }).strict(),
};

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body ?? {});
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const param = issue.code === 'unrecognized_keys' ? issue.keys[0] : issue.path.join('.');
    throw errors.invalidRequest(issue.code === 'unrecognized_keys' ? `Unknown field '${param}'.` : `${param}: ${issue.message}`, param || undefined);
  }
  return r.data;
}

/**
 * The admin API: only the admin token, never a user key. Disabled when no admin token is configured.
 * Wrong admin tokens are counted per client address in `limiter` (pass the console's sign-in limiter to
 * count guesses made here and at the console sign-in together; without one the admin API keeps its own).
 */
export function registerAdminRoutes(
  app: FastifyInstance,
  deps: {
    admin: AdminService;
    store: Store;
    adminToken: string | undefined;
    clock?: Clock;
    webhooks?: WebhookAdmin;
    video?: VideoService;
    catalog?: Catalog;
    limiter?: SignInLimiter;
  },
): void {
  const clock = deps.clock;
  const check = adminTokenGuard(deps.adminToken, deps.limiter ?? new SignInLimiter(() => clock?.now() ?? Date.now()));
  app.register(async (admin) => {
    admin.addHook('onRequest', async (req) => check(req));
    admin.get('/admin/accounts', async () => ({ data: (await deps.admin.listAccounts()).map(view.account) }));
    admin.post('/admin/accounts', async (req, reply) => {
      const b = parse(adminSchemas.account, req.body);
      reply.code(201);
      return view.account(await deps.admin.createAccount(b.name, b));
    });
    admin.get<{ Params: { name: string } }>('/admin/accounts/:name', async (req) => view.account(await deps.admin.account(req.params.name)));
    admin.post<{ Params: { name: string } }>('/admin/accounts/:name/topup', async (req) => {
      const b = parse(adminSchemas.topup, req.body);
      return view.account(await deps.admin.topUp(req.params.name, b.amount, b.note));
    });
    admin.get<{ Params: { name: string }; Querystring: LedgerQuery }>('/admin/accounts/:name/ledger', async (req) => ({
      data: (await deps.admin.ledger(req.params.name, parseLedgerQuery(req.query))).map(view.entry),
    }));
    admin.get<{ Querystring: AdminKeyQuery }>('/admin/keys', async (req) => adminListKeys(deps.admin, req.query));
    admin.post('/admin/keys', async (req, reply) => {
      const b = parse(adminSchemas.key, req.body);
      const { key, record } = await deps.admin.createKey(b as Parameters<AdminService['createKey']>[0]);
      reply.code(201);
      return { ...view.key(record), key };
    });
    admin.post<{ Params: { id: string } }>('/admin/keys/:id/revoke', async (req) => view.key(await deps.admin.revokeKey(req.params.id)));
    admin.put<{ Params: { id: string } }>('/admin/keys/:id/budget', async (req) => {
      const b = parse(adminSchemas.budget, req.body);
      return view.key(await deps.admin.setKeyBudget(req.params.id, b.budget));
    });
    admin.get<{ Querystring: AdminUsageQuery }>('/admin/usage', async (req, reply) => {
      const report = await adminUsage(deps.admin, deps.store, req.query, deps.clock?.now() ?? Date.now());
      const wantsCsv = req.query.format === 'csv' || (req.query.format === undefined && /text\/csv/.test(String(req.headers.accept ?? '')));
      if (!wantsCsv) return report.json;
      reply.type('text/csv; charset=utf-8').header('content-disposition', 'attachment; filename="usage.csv"');
      return report.csv();
    });
    if (deps.webhooks) registerWebhookAdminRoutes(admin, deps.webhooks);
    registerAdminConsoleRoutes(admin, { admin: deps.admin, video: deps.video, catalog: deps.catalog, parse });
    admin.get('/admin/reconcile', async () => ({ data: await deps.store.listReconcile(200) }));
  });
}
