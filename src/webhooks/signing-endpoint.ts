import type { Store } from '../store/types.js';
import type { OutboxRecord } from '../store/webhook-types.js';
import { receiverKey } from './events.js';

export type Signing = { secrets: string[]; refusal: null } | { secrets: null; refusal: string };

/**
 * The secrets that sign a delivery, or why nothing may be sent; a disabled endpoint's secret never
 * signs anything again.
 *
 * A delivery to an endpoint's own URL (its events, or a job's target at that URL) is signed by every
 * active endpoint of the account at that URL: during a secret rotation (a new endpoint registered
 * at the URL, the old one disabled later) the receiver verifies with whichever secret it holds, and
 * a delivery waiting for a retry when the old endpoint is disabled goes on under the new one. With
 * no active endpoint left at the URL it stops.
 *
 * A job's target at any other URL is signed by the account's active endpoint it was filed under
 * while that is active, else the account's first active one; with none left it fails.
 */
export async function signingSecrets(store: Pick<Store, 'listWebhookEndpoints'>, row: OutboxRecord): Promise<Signing> {
  const endpoints = await store.listWebhookEndpoints(row.accountId);
  const active = endpoints.filter((e) => e.disabledAt === null);
  const own = row.endpointId ? endpoints.find((e) => e.id === row.endpointId) : undefined;
  if (row.endpointId && !own) return { secrets: null, refusal: 'the signing endpoint no longer exists' };
  if (own && own.url === row.url) {
    const receiver = receiverKey(row.url);
    const atUrl = active.filter((e) => receiverKey(e.url) === receiver);
    return atUrl.length > 0 ? { secrets: atUrl.map((e) => e.secret), refusal: null } : { secrets: null, refusal: 'the endpoint was disabled' };
  }
  const signer = own && own.disabledAt === null ? own : active[0];
  return signer ? { secrets: [signer.secret], refusal: null } : { secrets: null, refusal: 'the account has no active webhook endpoint to sign with' };
}
