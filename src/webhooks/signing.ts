import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** A new Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The three Standard Webhooks headers for one delivery attempt. The id stays the same on every
 * retry (receivers deduplicate on it); the timestamp is the attempt's, as the specification asks.
 * With several secrets (a rotation in progress) the signature header lists one signature per
 * secret, space-separated, as the specification allows: verifiers accept the message if any matches.
 */
export function signedHeaders(secrets: readonly string[], msgId: string, payload: string, at: Date): Record<string, string> {
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(msgId, at, payload)).join(' '),
  };
}
