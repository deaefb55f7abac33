import { createSign } from 'node:crypto';
import { credentialFiles, type CredentialFile } from '../../core/credential-files.js';
import { errors } from '../../core/errors.js';
import { isObject, type JsonObject } from '../../core/json.js';
import type { CallSignal } from '../../http/call-signal.js';
import type { Executor } from '../../http/executor.js';
import { TransportError, type CredentialSource } from '../../http/types.js';

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
  /**
   * A service-account key file, as read once at start (core/credential-files.ts): the same contents
   * the redaction of the upstream's text hides. A file changed later is not read again.
   */
  keyFile?: CredentialFile;
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

/** Reads `access_token`, `service_account` (inline key object or its JSON text) and `key_file` (its contents) from upstream options. */
export function googleAuthOptionsFrom(options: JsonObject): GoogleAuthOptions {
  const out: GoogleAuthOptions = {};
  const token = options['access_token'];
  if (typeof token === 'string' && token.trim() !== '') out.accessToken = token.trim();
  const sa = options['service_account'];
  if (sa !== undefined && sa !== null) out.serviceAccount = parseServiceAccount(sa, 'service_account');
  const file = credentialFiles(options).get('key_file');
  if (file) out.keyFile = file;
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

/** One token exchange and the calls waiting on it. */
interface Exchange {
  result: Promise<CachedToken>;
  /** Cuts the exchange once no call waits on it any more. */
  cut: AbortController;
  /** Calls waiting; one that cannot be aborted (no signal) stays counted until the end. */
  waiting: number;
}

class ServiceAccountTokens implements CredentialSource {
  private key: ServiceAccountKey | undefined;
  private cached: CachedToken | undefined;
  /** One refresh at a time: concurrent callers await the same exchange. */
  private inflight: Exchange | undefined;

  constructor(
    private readonly opts: GoogleAuthOptions,
    private readonly executor: Executor,
    private readonly now: () => number,
  ) {
    this.key = opts.serviceAccount;
  }

  async headers(signal?: CallSignal): Promise<Record<string, string>> {
    const t = this.now();
    const c = this.cached;
    if (c && t < c.refreshAt) return bearerHeader(c.token);
    try {
      const fresh = await this.refresh(signal);
      return bearerHeader(fresh.token);
    } catch (e) {
      // A call that was cancelled ends as cancelled, whatever the cache holds.
      if (signal?.aborted) throw e;
      // A failed early refresh must not break requests while the old token is still good.
      if (c && this.now() < c.expiresAt - HARD_EXPIRY_SKEW_MS) return bearerHeader(c.token);
      throw e;
    }
  }

  /**
   * Waits for the shared exchange, or for `signal`. A call stops waiting when its signal aborts
   * (shutdown aborts the signal of every vendor poll; a client that hangs up, its own), and the
   * exchange itself is cut when the last call waiting on it has gone: otherwise a token endpoint
   * that never answers held a stopped poll, and the drain with it, for the exchange's whole 15 s,
   * and closing the upstream pool waited for the exchange as well.
   */
  private refresh(signal?: CallSignal): Promise<CachedToken> {
    if (signal?.aborted) return Promise.reject(cancelled());
    const x = (this.inflight ??= this.startExchange());
    x.waiting += 1;
    if (!signal) return x.result;
    return new Promise<CachedToken>((resolve, reject) => {
      const onAbort = () => {
        this.leave(x);
        reject(cancelled());
      };
      signal.addEventListener('abort', onAbort, { once: true });
      x.result.then(
        (v) => {
          signal.removeEventListener('abort', onAbort);
          resolve(v);
        },
        (e: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      );
    });
  }

  private startExchange(): Exchange {
    const cut = new AbortController();
    const x: Exchange = { cut, waiting: 0, result: this.exchange(cut.signal) };
    const done = () => {
      if (this.inflight === x) this.inflight = undefined;
    };
    // Handled here too: an exchange cut after every caller left has nobody else to hear its failure.
    x.result.then(done, done);
    return x;
  }

  private leave(x: Exchange): void {
    x.waiting -= 1;
    if (x.waiting > 0) return;
    // A call that arrives from now on starts an exchange of its own rather than join one being cut.
    if (this.inflight === x) this.inflight = undefined;
    x.cut.abort();
  }

  private async exchange(signal: AbortSignal): Promise<CachedToken> {
    const key = this.loadKey();
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
      signal,
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

  private loadKey(): ServiceAccountKey {
    if (this.key) return this.key;
    const file = this.opts.keyFile!;
    if ('error' in file) throw errors.internal(`Cannot read the Google key file ${file.path}: ${file.error}`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(file.text);
    } catch {
      throw errors.internal(`The Google key file ${file.path} is not valid JSON.`);
    }
    this.key = parseServiceAccount(parsed, `key file ${file.path}`);
    return this.key;
  }
}

function cancelled(): TransportError {
  return new TransportError('aborted', 'the call was cancelled while it waited for a Google access token', false);
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
