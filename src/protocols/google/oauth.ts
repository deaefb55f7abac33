import { createSign } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { errors } from '../../core/errors.js';
import { isObject, type JsonObject } from '../../core/json.js';
import type { Executor } from '../../http/executor.js';
import type { CredentialSource } from '../../http/types.js';

/**
 * Google OAuth2 access tokens for Vertex AI and Cloud Storage, shared by every Google-backed adapter.
 * Either a static access token is used as it is, or a service-account key signs an RS256 JWT that is
 * exchanged at the key's `token_uri` (honoured, so a simulator can stand in for Google).
 */

/** The fields of a service-account key file this module reads (the file has more; they are ignored). */
export interface ServiceAccountKey {
  client_email: string;
  private_key: string;
  private_key_id?: string;
  token_uri?: string;
  project_id?: string;
  [key: string]: unknown;
}

export interface GoogleAuthOptions {
  accessToken?: string;
  serviceAccount?: ServiceAccountKey;
  /** Path of a service-account key file, read on first use. */
  keyFile?: string;
}

export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
export const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';

/** Lifetime asked for in the JWT; Google caps access tokens at one hour. */
const ASSERTION_LIFETIME_S = 3600;
/** Refresh this long before expiry so no request leaves with a token about to lapse. */
const REFRESH_EARLY_MS = 5 * 60_000;
/** A token this close to expiry is not used even when a refresh has failed. */
const HARD_EXPIRY_SKEW_MS = 30_000;
const TOKEN_TIMEOUT_MS = 15_000;

/** Reads `access_token`, `service_account` (inline key object or its JSON text) and `key_file` from upstream options. */
export function googleAuthOptionsFrom(options: JsonObject): GoogleAuthOptions {
  const out: GoogleAuthOptions = {};
  const token = options['access_token'];
  if (typeof token === 'string' && token.trim() !== '') out.accessToken = token.trim();
  const sa = options['service_account'];
  if (sa !== undefined && sa !== null) out.serviceAccount = parseServiceAccount(sa, 'service_account');
  const file = options['key_file'];
  if (typeof file === 'string' && file.trim() !== '') out.keyFile = file.trim();
  return out;
}

export function googleCredentialSource(
  opts: GoogleAuthOptions,
  executor: Executor,
  now: () => number = Date.now,
): CredentialSource {
  if (opts.accessToken) {
    const headers = { authorization: `Bearer ${opts.accessToken}` };
    return { headers: async () => ({ ...headers }) };
  }
  if (opts.serviceAccount || opts.keyFile) return new ServiceAccountTokens(opts, executor, now);
  throw new Error('Google credentials need one of access_token, service_account or key_file');
}

interface CachedToken {
  token: string;
  expiresAt: number;
  refreshAt: number;
}

class ServiceAccountTokens implements CredentialSource {
  private key: ServiceAccountKey | undefined;
  private cached: CachedToken | undefined;
  /** One refresh at a time: concurrent callers await the same exchange. */
  private inflight: Promise<CachedToken> | undefined;

  constructor(
    private readonly opts: GoogleAuthOptions,
    private readonly executor: Executor,
    private readonly now: () => number,
  ) {
    this.key = opts.serviceAccount;
  }

  async headers(): Promise<Record<string, string>> {
    const t = this.now();
    const c = this.cached;
    if (c && t < c.refreshAt) return bearerHeader(c.token);
    try {
      const fresh = await this.refresh();
      return bearerHeader(fresh.token);
    } catch (e) {
      // A failed early refresh must not break requests while the old token is still good.
      if (c && this.now() < c.expiresAt - HARD_EXPIRY_SKEW_MS) return bearerHeader(c.token);
      throw e;
    }
  }

  private refresh(): Promise<CachedToken> {
    this.inflight ??= this.exchange().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  private async exchange(): Promise<CachedToken> {
    const key = await this.loadKey();
    const tokenUri = key.token_uri || DEFAULT_TOKEN_URI;
    const issuedAt = this.now();
    const assertion = signAssertion(key, tokenUri, Math.floor(issuedAt / 1000));
    const body = new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion,
    }).toString();
    const res = await this.executor.send(
      {
        method: 'POST',
        url: tokenUri,
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body,
      },
      TOKEN_TIMEOUT_MS,
    );
    const json = isObject(res.json) ? res.json : {};
    if (res.status < 200 || res.status >= 300 || typeof json['access_token'] !== 'string') {
      const reason = [json['error'], json['error_description']].filter((v) => typeof v === 'string').join(': ');
      throw errors.upstreamError(
        `Google token endpoint refused the service-account key (HTTP ${res.status}${reason ? `, ${reason}` : ''}).`,
      );
    }
    const ttlS = typeof json['expires_in'] === 'number' && json['expires_in'] > 0 ? json['expires_in'] : 3600;
    const ttlMs = ttlS * 1000;
    const expiresAt = issuedAt + ttlMs;
    // Short-lived tokens (simulators, tests) still get most of their life used.
    const token: CachedToken = {
      token: json['access_token'],
      expiresAt,
      refreshAt: expiresAt - Math.min(REFRESH_EARLY_MS, ttlMs / 2),
    };
    this.cached = token;
    return token;
  }

  private async loadKey(): Promise<ServiceAccountKey> {
    if (this.key) return this.key;
    const path = this.opts.keyFile!;
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (e) {
      throw errors.internal(`Cannot read the Google key file ${path}: ${(e as Error).message}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw errors.internal(`The Google key file ${path} is not valid JSON.`);
    }
    this.key = parseServiceAccount(parsed, `key file ${path}`);
    return this.key;
  }
}

function bearerHeader(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** Validates a service-account key (object or JSON text) without ever echoing the private key. */
export function parseServiceAccount(value: unknown, where: string): ServiceAccountKey {
  let v = value;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      throw errors.internal(`Google ${where} is not a JSON service-account key.`);
    }
  }
  if (!isObject(v)) throw errors.internal(`Google ${where} must be a service-account key object.`);
  const email = v['client_email'];
  const pem = v['private_key'];
  if (typeof email !== 'string' || email === '') throw errors.internal(`Google ${where} has no client_email.`);
  if (typeof pem !== 'string' || !pem.includes('PRIVATE KEY')) throw errors.internal(`Google ${where} has no private_key.`);
  const tokenUri = v['token_uri'];
  if (tokenUri !== undefined && (typeof tokenUri !== 'string' || !/^https?:\/\//.test(tokenUri)))
    throw errors.internal(`Google ${where} has an invalid token_uri.`);
  return v as ServiceAccountKey;
}

/** The RS256 JWT of the OAuth2 JWT-bearer grant (RFC 7523), as Google's token endpoint expects it. */
export function signAssertion(key: ServiceAccountKey, tokenUri: string, iatSeconds: number): string {
  const header: Record<string, string> = { alg: 'RS256', typ: 'JWT' };
  if (key.private_key_id) header['kid'] = key.private_key_id;
  const claims = {
    iss: key.client_email,
    scope: CLOUD_PLATFORM_SCOPE,
    aud: tokenUri,
    iat: iatSeconds,
    exp: iatSeconds + ASSERTION_LIFETIME_S,
  };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  let signature: Buffer;
  try {
    signature = createSign('RSA-SHA256').update(input).sign(key.private_key);
  } catch {
    throw errors.internal(`The private key of ${key.client_email} cannot sign (is it a valid PEM RSA key?).`);
  }
  return `${input}.${signature.toString('base64url')}`;
}

function b64url(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url');
}
