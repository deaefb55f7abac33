import { createPublicKey, generateKeyPairSync, randomBytes, randomUUID, verify, type KeyObject } from 'node:crypto';
import { SimServer, type SimReply, type SimRequest } from './framework.js';
import { CLOUD_PLATFORM_SCOPE, type ServiceAccountKey } from '../protocols/google/oauth.js';

/**
 * A stand-in for Google's OAuth2 token endpoint (JWT-bearer grant). It verifies the RS256 signature
 * with the public half of the service-account keys it knows, checks iss/aud/scope/iat/exp as Google
 * does, and issues opaque access tokens that the Vertex simulator then accepts as Bearer tokens.
 */
export interface IssuerOptions {
  /** Lifetime of issued tokens, seconds (Google: 3599). */
  ttlSeconds?: number;
  /** Clock for iat/exp checks and token expiry (tests move it). */
  now?: () => number;
}

interface Known {
  email: string;
  publicKey: KeyObject;
}

export class TokenIssuer {
  private readonly keys = new Map<string, Known>();
  private readonly tokens = new Map<string, number>();
  /** Number of tokens issued so far. */
  issued = 0;
  ttlSeconds: number;
  now: () => number;

  constructor(opts: IssuerOptions = {}) {
    this.ttlSeconds = opts.ttlSeconds ?? 3599;
    this.now = opts.now ?? Date.now;
  }

  /** Makes a fresh RSA key, registers its public half, and returns a key-file-shaped object. */
  newServiceAccount(tokenUri: string, project = 'sim-project'): ServiceAccountKey {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const kid = randomBytes(20).toString('hex');
    const email = `veo-sim-${kid.slice(0, 6)}@${project}.iam.gserviceaccount.com`;
    this.keys.set(kid, { email, publicKey });
    return {
      type: 'service_account',
      project_id: project,
      private_key_id: kid,
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      client_email: email,
      client_id: String(Date.now()),
      auth_uri: 'https://accounts.google.com/o/oauth2/auth',
      token_uri: tokenUri,
    };
  }

  /** Registers a key made elsewhere (e.g. a key file written by a test). */
  trust(key: ServiceAccountKey): void {
    const kid = key.private_key_id ?? randomUUID();
    this.keys.set(kid, { email: key.client_email, publicKey: createPublicKey(key.private_key) });
  }

  isValid(token: string | undefined): boolean {
    if (!token) return false;
    const exp = this.tokens.get(token);
    return exp !== undefined && this.now() < exp;
  }

  /** POST {tokenUri}: application/x-www-form-urlencoded grant_type + assertion. */
  handle(req: SimRequest, tokenUri: string): SimReply {
    const form = new URLSearchParams(req.raw.toString('utf8'));
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer')
      return oauthError('unsupported_grant_type', `Invalid grant_type: ${form.get('grant_type') ?? ''}`);
    const parts = (form.get('assertion') ?? '').split('.');
    if (parts.length !== 3) return oauthError('invalid_grant', 'Invalid JWT: malformed assertion.');
    const [h, c, s] = parts as [string, string, string];
    let header: any;
    let claims: any;
    try {
      header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8'));
      claims = JSON.parse(Buffer.from(c, 'base64url').toString('utf8'));
    } catch {
      return oauthError('invalid_grant', 'Invalid JWT: unparsable header or claims.');
    }
    if (header?.alg !== 'RS256') return oauthError('invalid_grant', 'Invalid JWT: alg must be RS256.');
    const candidates = header.kid && this.keys.has(header.kid) ? [this.keys.get(header.kid)!] : [...this.keys.values()];
    const signer = candidates.find((k) =>
      verify('sha256', Buffer.from(`${h}.${c}`), k.publicKey, Buffer.from(s, 'base64url')),
    );
    if (!signer) return oauthError('invalid_grant', 'Invalid JWT Signature.');
    if (claims.iss !== signer.email) return oauthError('invalid_grant', 'Invalid JWT: iss does not match the key.');
    if (claims.aud !== tokenUri) return oauthError('invalid_grant', 'Invalid JWT: Failed audience check.');
    const scopes = String(claims.scope ?? '').split(/\s+/);
    if (!scopes.includes(CLOUD_PLATFORM_SCOPE))
      return oauthError('invalid_scope', 'Invalid OAuth scope or ID token audience provided.');
    const nowS = this.now() / 1000;
    const { iat, exp } = claims;
    if (typeof iat !== 'number' || typeof exp !== 'number' || exp <= iat || exp - iat > 3600 || iat > nowS + 300 || exp < nowS)
      return oauthError(
        'invalid_grant',
        'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.',
      );
    const token = `ya29.sim-${randomBytes(24).toString('base64url')}`;
    this.tokens.set(token, this.now() + this.ttlSeconds * 1000);
    this.issued += 1;
    return { json: { access_token: token, expires_in: this.ttlSeconds, token_type: 'Bearer' } };
  }
}

function oauthError(error: string, description: string): SimReply {
  return { status: 400, json: { error, error_description: description } };
}

/** A server that hosts only the token endpoint, at /token. */
export async function startTokenServer(opts: IssuerOptions = {}): Promise<{ sim: SimServer; issuer: TokenIssuer; tokenUri: string }> {
  const issuer = new TokenIssuer(opts);
  const sim = await SimServer.start('google-token', (req, s) => {
    if (req.method === 'POST' && req.path === '/token') return issuer.handle(req, `${s.url}/token`);
    return { status: 404, json: { error: 'not_found', error_description: `No route ${req.method} ${req.path}` } };
  });
  return { sim, issuer, tokenUri: `${sim.url}/token` };
}
