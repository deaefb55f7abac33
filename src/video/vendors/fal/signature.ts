import { createHash } from 'node:crypto';
import type { CallbackSignature } from '../../types.js';

/**
 * fal's webhook signatures, as its webhook documentation defines them: ED25519 over
 *
 *   {X-Fal-Webhook-Request-Id}\n{X-Fal-Webhook-User-Id}\n{X-Fal-Webhook-Timestamp}\n{sha256 hex of the raw body}
 *
 * with the signature hex-encoded in X-Fal-Webhook-Signature, the timestamp in seconds, at most five
 * minutes off, and the public keys published as a JWKS (any of its keys may have signed).
 */
export const FAL_JWKS_URL = 'https://rest.alpha.fal.ai/.well-known/jwks.json';

const HEX_SIGNATURE = /^[0-9a-fA-F]{128}$/;
const SECONDS = /^\d{1,12}$/;
/** Header values are echoed into the signed message; anything longer than an id is not one. */
const MAX_ID = 256;

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  return typeof v === 'string' && v.length > 0 && v.length <= MAX_ID ? v : undefined;
}

/** The message fal signs, from its parts (the simulator signs with the same function). */
export function falSignedMessage(requestId: string, userId: string, timestamp: string, body: Buffer): Buffer {
  const digest = createHash('sha256').update(body).digest('hex');
  return Buffer.from(`${requestId}\n${userId}\n${timestamp}\n${digest}`, 'utf8');
}

export const falCallbackSignature: CallbackSignature = {
  jwksUrl: FAL_JWKS_URL,
  toleranceSeconds: 300,
  read(headers, body) {
    const requestId = header(headers, 'x-fal-webhook-request-id');
    const userId = header(headers, 'x-fal-webhook-user-id');
    const timestamp = header(headers, 'x-fal-webhook-timestamp');
    const signature = header(headers, 'x-fal-webhook-signature');
    if (!requestId || !userId || !timestamp || !signature) return { refused: 'missing X-Fal-Webhook-* headers' };
    if (!SECONDS.test(timestamp)) return { refused: 'malformed timestamp' };
    if (!HEX_SIGNATURE.test(signature)) return { refused: 'malformed signature' };
    return { message: falSignedMessage(requestId, userId, timestamp, body), signature: Buffer.from(signature, 'hex'), timestamp: Number(timestamp) };
  },
};
