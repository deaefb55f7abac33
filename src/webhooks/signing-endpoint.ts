import type { Store } from '../store/types.js';
import type { OutboxRecord, WebhookEndpoint } from '../store/webhook-types.js';

/**
 * The endpoint whose secret signs the delivery, or why nothing may be sent. An endpoint's own
 * event (the row's URL is the endpoint's) stops when the endpoint is disabled. A job's own target
 * is signed by the account's active endpoint: the one it was filed under while that is active,
 * else the account's first active one; with none left it fails, so a disabled endpoint's secret
 * never signs anything again.
 */
export async function signingEndpoint(
  store: Pick<Store, 'getWebhookEndpoint' | 'listWebhookEndpoints'>,
  row: OutboxRecord,
): Promise<{ endpoint: WebhookEndpoint; refusal: null } | { endpoint: null; refusal: string }> {
  const own = row.endpointId ? await store.getWebhookEndpoint(row.endpointId) : undefined;
  if (row.endpointId && !own) return { endpoint: null, refusal: 'the signing endpoint no longer exists' };
  if (own && own.url === row.url) return own.disabledAt === null ? { endpoint: own, refusal: null } : { endpoint: null, refusal: 'the endpoint was disabled' };
  if (own && own.disabledAt === null) return { endpoint: own, refusal: null };
  const active = (await store.listWebhookEndpoints(row.accountId)).find((e) => e.disabledAt === null);
  return active ? { endpoint: active, refusal: null } : { endpoint: null, refusal: 'the account has no active webhook endpoint to sign with' };
}
