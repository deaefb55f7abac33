import type { Json, JsonObject } from './json.js';
import { configuredSecrets, type CredentialBearer } from './redact-config.js';
import { compileSecrets, MIN_SECRET_LENGTH, NO_SECRETS, removeSecrets, type Secrets } from './redact-secrets.js';
import { applyShape, mayHoldShape, SHAPES } from './redact-shapes.js';

/**
 * The one redaction of the gateway. Everything an upstream says (error messages, params, vendor_data,
 * SSE error events) and every log line passes through it before it leaves the process, because
 * upstreams and the proxies in front of them echo credentials back: a wrong key repeated in a 401,
 * an Authorization header quoted in a 400, a signed URL in a 404.
 *
 * Two layers: the exact credentials configured for the upstream (whatever their shape, in any case,
 * and base64-encoded), and anything shaped like a credential (auth-scheme tokens, key prefixes,
 * private keys, signed query parameters), whoever it belongs to.
 *
 * It runs on text the caller controls (the request path is in every access line), so every pattern
 * here takes time linear in the text: none may start a match attempt at each of many positions of
 * one run and read to the run's end from each.
 */

export { configuredSecrets, type CredentialBearer } from './redact-config.js';
export { compileSecrets, type Secrets } from './redact-secrets.js';
export { applyShape, mayHoldShape, REDACTED, type Replacement, SHAPES } from './redact-shapes.js';

/**
 * Removes `secrets` (exact values in any case, also in their JSON-escaped form, and the base64 text
 * holding one) and every credential shape from `text`. Cheap on text with nothing to hide; idempotent.
 */
export function redact(text: string, secrets: Secrets = NO_SECRETS): string {
  if (text.length < 6) return text;
  const out = removeSecrets(text, secrets);
  if (!mayHoldShape(out)) return out;
  let shaped = out;
  for (const shape of SHAPES) shaped = applyShape(shaped, shape);
  return shaped;
}

/** Redacts every string (keys included) of a JSON value; returns a copy. */
export function redactJson<T extends Json>(value: T, secrets: Secrets = NO_SECRETS): T {
  return walk(value, secrets) as T;
}

function walk(value: Json, secrets: Secrets): Json {
  if (typeof value === 'string') return redact(value, secrets);
  if (Array.isArray(value)) return value.map((v) => walk(v, secrets));
  if (value !== null && typeof value === 'object') {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value)) out[redact(k, secrets)] = walk(v, secrets);
    return out;
  }
  return value;
}

/**
 * The redaction for one upstream: its configured credentials, plus those minted while running (OAuth
 * access tokens), remembered as they are applied so an echo of a token is caught whatever its shape.
 */
export class UpstreamRedactor {
  private secrets: Secrets;
  private readonly learned: string[] = [];

  constructor(private readonly configured: readonly string[]) {
    this.secrets = compileSecrets(configured);
  }

  /** Adds a credential applied at run time; keeps the last few (tokens rotate). */
  learn(value: string): void {
    if (value.length < MIN_SECRET_LENGTH || this.learned.includes(value)) return;
    this.learned.push(value);
    if (this.learned.length > 8) this.learned.shift();
    this.secrets = compileSecrets([...this.configured, ...this.learned]);
  }

  text(s: string): string {
    return redact(s, this.secrets);
  }

  /**
   * Removes only this upstream's own credentials (exact values and their base64 forms), not the
   * shapes: for text that may rightly look like a credential (generated content), but must never
   * carry ours.
   */
  ownCredentials(s: string): string {
    return removeSecrets(s, this.secrets);
  }

  json<T extends Json>(v: T): T {
    return redactJson(v, this.secrets);
  }

  optional(s: string | undefined): string | undefined {
    return s === undefined ? undefined : redact(s, this.secrets);
  }
}

const byUpstream = new WeakMap<CredentialBearer, UpstreamRedactor>();

/** The redactor of one upstream, built on first use and kept for the upstream's lifetime. */
export function redactorFor(up: CredentialBearer): UpstreamRedactor {
  let r = byUpstream.get(up);
  if (!r) byUpstream.set(up, (r = new UpstreamRedactor(configuredSecrets(up))));
  return r;
}
