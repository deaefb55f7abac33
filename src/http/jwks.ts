import { createPublicKey, type KeyObject } from 'node:crypto';

/** Fetches a JWKS document: status and body bytes (the caller sends it through the one upstream client). */
export type JwksFetch = (url: string) => Promise<{ status: number; raw: Buffer }>;

export interface JwksOptions {
  /** Keys are trusted this long after a fetch (fal: no longer than a day, its keys may rotate). */
  ttlMs: number;
  /** After a failed fetch, no new attempt for this long: an unreachable JWKS costs one request per window. */
  retryAfterFailureMs: number;
  /** A signature no cached key verifies may mean a new key: refetch at most this often for it. */
  minRefreshMs: number;
  now?: () => number;
}

/** A JWKS is a handful of keys; anything larger is not one. */
const MAX_JWKS_BYTES = 64 * 1024;
const MAX_KEYS = 32;

interface Entry {
  keys?: KeyObject[];
  fetchedAt: number;
  failedAt: number;
  inflight?: Promise<KeyObject[]>;
}

export class JwksUnavailable extends Error {}

/**
 * Ed25519 public keys from JSON Web Key Sets, cached per URL. One fetch at a time per URL; a failed
 * fetch is not retried for a while (so a flood of callbacks cannot become a flood of key fetches),
 * and with no keys to verify with, verification fails closed.
 */
export class Ed25519Jwks {
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;

  constructor(
    private readonly fetch: JwksFetch,
    private readonly opts: JwksOptions,
  ) {
    this.now = opts.now ?? Date.now;
  }

  /**
   * The keys for `url`. `fresh` asks for a refetch (a signature the cached keys did not verify),
   * granted at most once per `minRefreshMs`. Throws JwksUnavailable when there are no keys.
   */
  async keys(url: string, fresh = false): Promise<KeyObject[]> {
    const t = this.now();
    let e = this.entries.get(url);
    if (!e) {
      e = { fetchedAt: 0, failedAt: 0 };
      this.entries.set(url, e);
    }
    if (e.inflight) return e.inflight;
    const age = t - e.fetchedAt;
    const due = !e.keys || age >= this.opts.ttlMs || (fresh && age >= this.opts.minRefreshMs);
    const coolingDown = t - e.failedAt < this.opts.retryAfterFailureMs;
    if (!due || coolingDown) {
      if (e.keys && age < this.opts.ttlMs) return e.keys;
      throw new JwksUnavailable('the signing keys could not be fetched');
    }
    const entry = e;
    entry.inflight = this.load(url)
      .then((keys) => {
        entry.keys = keys;
        entry.fetchedAt = this.now();
        return keys;
      })
      .catch((err: unknown) => {
        entry.failedAt = this.now();
        // Keys still inside their lifetime stay usable when a refresh for a possible new key fails.
        if (entry.keys && this.now() - entry.fetchedAt < this.opts.ttlMs) return entry.keys;
        throw err instanceof JwksUnavailable ? err : new JwksUnavailable((err as Error).message);
      })
      .finally(() => {
        entry.inflight = undefined;
      });
    return entry.inflight;
  }

  private async load(url: string): Promise<KeyObject[]> {
    const res = await this.fetch(url);
    if (res.status !== 200) throw new JwksUnavailable(`the key set answered ${res.status}`);
    if (res.raw.length > MAX_JWKS_BYTES) throw new JwksUnavailable('the key set is too large');
    let doc: unknown;
    try {
      doc = JSON.parse(res.raw.toString('utf8'));
    } catch {
      throw new JwksUnavailable('the key set is not JSON');
    }
    const list = (doc as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(list)) throw new JwksUnavailable('the key set has no keys array');
    const keys: KeyObject[] = [];
    for (const k of list.slice(0, MAX_KEYS)) {
      const key = ed25519Key(k);
      if (key) keys.push(key);
    }
    if (keys.length === 0) throw new JwksUnavailable('the key set holds no Ed25519 key');
    return keys;
  }
}

/** An OKP/Ed25519 JWK as a public KeyObject; undefined for any other key. */
function ed25519Key(k: unknown): KeyObject | undefined {
  if (typeof k !== 'object' || k === null) return undefined;
  const { kty, crv, x } = k as Record<string, unknown>;
  if (kty !== 'OKP' || crv !== 'Ed25519' || typeof x !== 'string') return undefined;
  // Some publishers pad the base64url coordinate; JWK wants it unpadded.
  const bare = x.replace(/=+$/, '');
  if (!/^[A-Za-z0-9_-]{43}$/.test(bare)) return undefined;
  try {
    return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: bare }, format: 'jwk' });
  } catch {
    return undefined;
  }
}
