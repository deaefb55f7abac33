import { verify, type KeyObject } from 'node:crypto';
import { STATIC_AUTH, type UpstreamClient } from '../http/upstream-client.js';
import { Ed25519Jwks, JwksUnavailable } from '../http/jwks.js';
import type { Upstream } from '../http/types.js';
import type { VideoVendor } from './types.js';

/** The upstream option that points a signing vendor's callbacks at another JWKS (a mirror, a simulator). */
export const JWKS_URL_OPTION = 'webhook_jwks_url';

const DAY_MS = 24 * 60 * 60 * 1000;
const JWKS_TIMEOUT_MS = 5_000;

export type CallbackVerdict = { ok: true } | { ok: false; reason: string };

/**
 * Checks a vendor callback's signature where the vendor signs (fal's ED25519 webhooks): the scheme
 * comes from the vendor adapter, the keys from the vendor's JWKS fetched through the one upstream
 * client and cached for a day. Fails closed: no keys, no acceptance.
 */
export class CallbackAuth {
  private readonly jwks: Ed25519Jwks;

  constructor(
    client: UpstreamClient,
    private readonly now: () => number = Date.now,
  ) {
    this.jwks = new Ed25519Jwks(
      // No credentials: the key set is public, and the vendor's API key must not travel to it.
      (url) => client.sendRaw(this.targets.get(url)!, STATIC_AUTH, { method: 'GET', url, headers: { accept: 'application/json' }, timeoutMs: JWKS_TIMEOUT_MS }),
      { ttlMs: DAY_MS, retryAfterFailureMs: 30_000, minRefreshMs: 60_000, now },
    );
  }

  /** Per JWKS URL, the upstream its fetches are made for (its name labels them in metrics and traces). */
  private readonly targets = new Map<string, Upstream>();

  async verify(vendor: VideoVendor, up: Upstream | undefined, headers: Record<string, string | string[] | undefined>, body: Buffer): Promise<CallbackVerdict> {
    const scheme = vendor.callbackSignature;
    if (!scheme) return { ok: true };
    const signed = scheme.read(headers, body);
    if ('refused' in signed) return { ok: false, reason: signed.refused };
    if (Math.abs(this.now() / 1000 - signed.timestamp) > scheme.toleranceSeconds) return { ok: false, reason: 'timestamp outside the tolerance' };
    const option = up?.options[JWKS_URL_OPTION];
    const url = typeof option === 'string' && option.length > 0 ? option : scheme.jwksUrl;
    try {
      const target = up ?? { name: vendor.id, vendor: vendor.id, baseUrl: new URL(url).origin, models: [], priority: 1, weight: 1, timeoutMs: JWKS_TIMEOUT_MS, options: {} };
      if (!this.targets.has(url)) this.targets.set(url, target);
      if (matches(await this.jwks.keys(url), signed.message, signed.signature)) return { ok: true };
      // Perhaps the vendor rotated its keys: look again (rate-limited inside the cache).
      if (matches(await this.jwks.keys(url, true), signed.message, signed.signature)) return { ok: true };
      return { ok: false, reason: 'the signature does not verify' };
    } catch (e) {
      return { ok: false, reason: e instanceof JwksUnavailable ? `no signing keys: ${e.message}` : 'no signing keys: the key set could not be fetched' };
    }
  }
}

function matches(keys: readonly KeyObject[], message: Buffer, signature: Buffer): boolean {
  return keys.some((k) => verify(null, message, k, signature));
}
