import type { FastifyInstance, FastifyRequest } from 'fastify';
import '../auth/types.js';
import type { AdminService } from '../admin/service.js';
import { keyUsage, parseGroupBy, parseRange, presentRow, toCsv } from '../admin/usage.js';
import type { Clock } from '../core/clock.js';
import type { Store } from '../store/types.js';

/**
 * GET /v1/usage (alias GET /v1/key, the name OpenRouter uses): the calling key's spend. Any valid key
 * may read its own usage; it never shows another key's.
 */
export function registerUsageRoutes(app: FastifyInstance, deps: { store: Store; clock: Clock }): void {
  const handler = async (req: FastifyRequest) => {
    const q = (req.query ?? {}) as { from?: string; to?: string };
    return keyUsage(deps.store, req.auth.account, req.auth.key, q, deps.clock.now());
  };
  app.get('/v1/usage', { config: { keyAction: 'any' } }, handler);
  app.get('/v1/key', { config: { keyAction: 'any' } }, handler);
}

export interface AdminUsageQuery {
  account?: string;
  key?: string;
  model?: string;
  from?: string;
  to?: string;
  group_by?: string;
  format?: string;
}

/** The admin report: filters by account name, key id or prefix, model; grouped by day, model or key; JSON or CSV. */
export async function adminUsage(admin: AdminService, store: Store, q: AdminUsageQuery, now: number) {
  const range = parseRange(q, now);
  const groupBy = parseGroupBy(q.group_by);
  const accountId = q.account ? (await admin.account(q.account)).id : undefined;
  const keyId = q.key ? (await admin.findKey(q.key)).id : undefined;
  const rows = await store.usage({ accountId, keyId, model: q.model || undefined, from: range.from, to: range.to, groupBy });
  return {
    groupBy,
    rows,
    json: {
      object: 'usage_report',
      group_by: groupBy,
      from: new Date(range.from).toISOString(),
      to: new Date(range.to).toISOString(),
      data: rows.map((r) => presentRow(groupBy, r)),
    },
    csv: () => toCsv(groupBy, rows),
  };
}
