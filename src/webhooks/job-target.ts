import { errors } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import type { Store } from '../store/types.js';
import { checkTarget } from './admin.js';

/**
 * The request field that names a per-job webhook target. No vendor uses this name (Seedance's
 * `callback_url` and fal's webhook parameters are native and keep reaching their vendors), so it is
 * taken out of the body here and never forwarded.
 */
export const JOB_WEBHOOK_FIELD = 'gateway_webhook_url';

/** Splits the per-job target off the body; a non-string value is a 400. */
export function takeJobWebhook(body: JsonObject): { body: JsonObject; url: string | undefined } {
  if (!(JOB_WEBHOOK_FIELD in body)) return { body, url: undefined };
  const { [JOB_WEBHOOK_FIELD]: url, ...rest } = body;
  if (url === null || url === undefined) return { body: rest, url: undefined };
  if (typeof url !== 'string') throw errors.invalidRequest(`'${JOB_WEBHOOK_FIELD}' must be a URL string.`, JOB_WEBHOOK_FIELD, 'invalid_webhook_url');
  return { body: rest, url };
}

/**
 * A per-job target must pass the SSRF rules, and the account needs a registered endpoint: its secret
 * signs the per-job deliveries, so the receiver can verify them like any other. The endpoint is
 * looked for first: an account that may not name a target never gets the gateway to resolve one.
 */
export async function checkJobWebhook(store: Pick<Store, 'listWebhookEndpoints'>, accountId: string, url: string, allowPrivate: boolean): Promise<void> {
  const active = (await store.listWebhookEndpoints(accountId)).some((e) => e.disabledAt === null);
  if (!active)
    throw errors.invalidRequest(
      `'${JOB_WEBHOOK_FIELD}' needs a webhook endpoint registered for the account: its secret signs the deliveries.`,
      JOB_WEBHOOK_FIELD,
      'invalid_webhook_url',
    );
  await checkTarget(url, JOB_WEBHOOK_FIELD, allowPrivate);
}
