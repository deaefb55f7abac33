import { errors } from '../core/errors.js';
import { view, type AdminService } from './service.js';

export interface AdminKeyQuery {
  account?: string;
  after?: string;
  limit?: string;
  order?: string;
}

export interface KeyListAnswer {
  object: 'list';
  data: ReturnType<typeof view.key>[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/**
 * GET /admin/keys: one page of the key records (never the keys), all or one account's, oldest first
 * unless `order=desc`; in the list shape of GET /v1/videos (`after` = the previous page's `last_id`).
 */
export async function adminListKeys(admin: AdminService, q: AdminKeyQuery): Promise<KeyListAnswer> {
  const order = q.order ?? 'asc';
  if (order !== 'asc' && order !== 'desc') throw errors.invalidRequest("'order' must be 'asc' or 'desc'.", 'order');
  // The service refuses a limit that is not a whole number in range (Number('') is 0, Number('x') NaN).
  const limit = q.limit === undefined ? undefined : Number(q.limit);
  const { keys, hasMore } = await admin.listKeys({ account: q.account || undefined, after: q.after || undefined, limit, order });
  return {
    object: 'list',
    data: keys.map(view.key),
    first_id: keys[0]?.id ?? null,
    last_id: keys[keys.length - 1]?.id ?? null,
    has_more: hasMore,
  };
}
