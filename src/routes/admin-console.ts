import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { adminGetJob, adminListJobs, type AdminJobQuery } from '../admin/jobs.js';
import { view, type AdminService } from '../admin/service.js';
import { errors } from '../core/errors.js';
import { queryTime } from '../core/query-time.js';
import { upstreamHealth } from '../ops/upstream-health.js';
import type { Catalog } from '../routing/catalog.js';
import type { LedgerFilter, LedgerKind } from '../store/types.js';
import type { VideoService } from '../video/service.js';

const quota = z.object({ rpm: z.number().int().min(0).optional(), tpm: z.number().int().min(0).optional() }).strict();
/** PATCH /admin/accounts/{name}: what may change after creation (the balance moves only by top-ups and charges). */
export const accountPatchSchema = z
  .object({
    upstreams: z.array(z.string()).nullable().optional(),
    limits: z.object({ embeddings: quota.optional(), chat: quota.optional(), video: quota.optional() }).strict().optional(),
  })
  .strict();

const LEDGER_KINDS: readonly LedgerKind[] = ['credit', 'hold', 'release', 'capture', 'charge'];

export interface LedgerQuery {
  limit?: string;
  kind?: string;
  model?: string;
  from?: string;
  to?: string;
  before?: string;
}

/** The ledger's filters: kind, model, a time range (a bare `to` date is inclusive) and an id cursor. */
export function parseLedgerQuery(q: LedgerQuery): LedgerFilter {
  const limit = Math.min(1000, Math.max(1, Number(q.limit ?? 100) || 100));
  const out: LedgerFilter = { limit };
  if (q.kind) {
    if (!LEDGER_KINDS.includes(q.kind as LedgerKind)) throw errors.invalidRequest(`'kind' must be one of ${LEDGER_KINDS.join(', ')}.`, 'kind');
    out.kind = q.kind as LedgerKind;
  }
  if (q.model) out.model = q.model.slice(0, 200);
  out.from = queryTime(q.from, 'from');
  out.to = queryTime(q.to, 'to', true);
  if (q.before !== undefined && q.before !== '') {
    const before = Number(q.before);
    if (!Number.isSafeInteger(before) || before < 1) throw errors.invalidRequest("'before' must be a ledger entry id.", 'before', 'invalid_cursor');
    out.before = before;
  }
  return out;
}

/**
 * Admin routes the console is built on (and any script can call): jobs across accounts, upstream
 * health, account changes. Registered inside the admin plugin, so the admin token guards them.
 */
export function registerAdminConsoleRoutes(admin: FastifyInstance, deps: { admin: AdminService; video?: VideoService; catalog?: Catalog; parse: <T>(s: z.ZodType<T>, b: unknown) => T }): void {
  admin.patch<{ Params: { name: string } }>('/admin/accounts/:name', async (req) => {
    const b = deps.parse(accountPatchSchema, req.body);
    return view.account(await deps.admin.updateAccount(req.params.name, b));
  });
  const { video, catalog } = deps;
  if (video) {
    admin.get<{ Querystring: AdminJobQuery }>('/admin/jobs', async (req) => adminListJobs(video, deps.admin, req.query));
    admin.get<{ Params: { id: string } }>('/admin/jobs/:id', async (req) => adminGetJob(video, req.params.id));
  }
  if (catalog) {
    admin.get('/admin/upstreams', async () => ({
      object: 'list',
      data: [...catalog.upstreams.values()].map((u) => ({
        name: u.name,
        vendor: u.vendor,
        models: u.models,
        priority: u.priority,
        weight: u.weight,
        circuit: catalog.circuits.stateOf(u.name),
        consecutive_failures: catalog.circuits.failuresOf(u.name),
        ...upstreamHealth(u.name),
      })),
    }));
  }
}
