import { setOwn, type Json, type JsonObject } from './json.js';
import { isNumberMarker, NUMBER_MARKER } from './lossless-json.js';
import { configuredHosts, configuredSecrets, type AddressBearer, type CredentialBearer } from './redact-config.js';
import { compileNames, configuredNames, MIN_NAME_LENGTH, type NameBearer, replaceNames } from './redact-names.js';
import { compileSecrets, MIN_SECRET_LENGTH, NO_SECRETS, removeSecrets, type Secrets } from './redact-secrets.js';
import { applyShape, mayHoldShape, SHAPES } from './redact-shapes.js';
import { clip } from './redact-cut.js';
import { redactInternalUrls } from './redact-urls.js';

/**
 * The one redaction of the gateway. Everything an upstream says (error messages, params, vendor_data,
 * SSE error events) and every log line passes through it before it leaves the process, because
 * upstreams and the proxies in front of them echo credentials back: a wrong key repeated in a 401,
 * an Authorization header quoted in a 400, a signed URL in a 404.
 *
 * Two layers: the exact credentials configured for the upstream (whatever their shape, in any case,
 * hex- and base64-encoded, with characters escaped, and what a cut of the text leaves of one;
 * redact-secrets.ts, redact-escapes.ts, redact-cut.ts), and anything shaped like a credential
 * (auth-scheme tokens, key prefixes, private keys, signed query parameters; redact-shapes.ts),
 * whoever it belongs to. Text from an upstream also loses internal
 * addresses and the upstream's own (redact-urls.ts), and the names of its resources (redact-names.ts).
 *
 * It runs on text the caller controls (the request path is in every access line), so every pattern
 * here takes time linear in the text: none may start a match attempt at each of many positions of
 * one run and read to the run's end from each.
 */

export { configuredHosts, configuredSecrets } from './redact-config.js';
export { compileNames, configuredNames } from './redact-names.js';
export { clip };
export { compileSecrets } from './redact-secrets.js';
export { applyShape, mayHoldShape, SHAPES } from './redact-shapes.js';

/**
 * The longest upstream text kept as a message (a job's failure reason, a vendor's refusal passed on):
 * longer text is cut before it is redacted, so that a vendor's megabyte of message costs no more to
 * redact than this (the redaction is linear, but ~1 us a character on text made to be hard for it).
 */
export const MAX_UPSTREAM_MESSAGE = 4096;

/**
 * Removes `secrets` (exact values in any case, also in their JSON-escaped form, the hex or base64
 * text holding one, and these with characters escaped) and every credential shape from `text`.
 * Given `hosts` (text from an upstream), also internal URLs and hosts, and the `hosts` of the
 * upstream's configured URLs (redact-urls.ts); given `names`, the names of its resources as whole
 * tokens (redact-names.ts). Cheap on text with nothing to hide; idempotent.
 */
export function redact(text: string, secrets: Secrets = NO_SECRETS, hosts?: ReadonlySet<string>, names?: RegExp): string {
  // Nothing shorter holds anything to hide: a resource name is the shortest (redact-names.ts).
  if (text.length < MIN_NAME_LENGTH) return text;
  let out = removeSecrets(text, secrets);
  if (mayHoldShape(out)) for (const shape of SHAPES) out = applyShape(out, shape);
  // Last: a URL cut short by it must not leave part of a credential behind, and a shape replaced
  // may leave a host standing on its own.
  if (hosts) out = redactInternalUrls(out, hosts);
  // After the hosts: a resource's name is replaced with its whole host where it has one.
  return names ? replaceNames(out, names) : out;
}

/** Redacts every string (keys included) of a JSON value; returns a copy. */
export function redactJson<T extends Json>(value: T, secrets: Secrets = NO_SECRETS, hosts?: ReadonlySet<string>, names?: RegExp): T {
  return walk(value, (s) => redact(s, secrets, hosts, names)) as T;
}

function walk(value: Json, text: (s: string) => string): Json {
  // A vendor's number kept as its text (core/lossless-json.ts): digits hide nothing, as a number's never did.
  if (typeof value === 'string') return isNumberMarker(value) ? value : text(value);
  if (Array.isArray(value)) return value.map((v) => walk(v, text));
  if (value !== null && typeof value === 'object') {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value)) setOwn(out, text(k), walk(v, text));
    return out;
  }
  return value;
}

/**
 * The redaction for one upstream's text: its configured credentials, plus those minted while running
 * (OAuth access tokens), remembered as they are applied so an echo of a token is caught whatever its
 * shape; every credential shape; internal addresses and the hosts of its configured URLs; and the
 * names of its resources.
 */
export class UpstreamRedactor {
  private secrets: Secrets;
  private readonly learned: string[] = [];
  private readonly hosts: ReadonlySet<string>;
  private readonly names: RegExp | undefined;

  constructor(
    private readonly configured: readonly string[],
    hosts: Iterable<string> = [],
    names: Iterable<string> = [],
  ) {
    this.secrets = compileSecrets(configured);
    this.hosts = new Set(hosts);
    this.names = compileNames(names);
  }

  /** Adds a credential applied at run time; keeps the last few (tokens rotate). */
  learn(value: string): void {
    if (value.length < MIN_SECRET_LENGTH || this.learned.includes(value)) return;
    this.learned.push(value);
    if (this.learned.length > 8) this.learned.shift();
    this.secrets = compileSecrets([...this.configured, ...this.learned]);
  }

  text(s: string): string {
    return redact(s, this.secrets, this.hosts, this.names);
  }

  /**
   * Removes only this upstream's own credentials (exact values and their encoded forms), not the
   * shapes nor any URL: for text that may rightly look like a credential or name any address
   * (generated content), but must never carry ours.
   */
  ownCredentials(s: string): string {
    return removeSecrets(s, this.secrets);
  }

  /**
   * Whether `raw` holds one of this upstream's credentials as it is: for bytes handed on without
   * passing through the redaction (an embeddings answer's base64 vectors, which the gateway decodes
   * and encodes again to the same characters).
   */
  foundIn(raw: Buffer): boolean {
    for (const list of [this.configured, this.learned]) {
      for (const c of list) if (c.length >= MIN_SECRET_LENGTH && raw.includes(c)) return true;
    }
    return false;
  }

  /**
   * The credentials `ownCredentials` removes (configured and learned), for the same removal done
   * on another thread (a large chat answer's, chat/completion-job.ts).
   */
  credentials(): string[] {
    return [...this.configured, ...this.learned];
  }

  json<T extends Json>(v: T): T {
    return redactJson(v, this.secrets, this.hosts, this.names);
  }

  /** An optional message (a vendor's `param`): as `message`. */
  optional(s: string | undefined): string | undefined {
    return s === undefined ? undefined : this.message(s);
  }

  /** A message from the upstream, cut to MAX_UPSTREAM_MESSAGE (where the redaction then looks for what a cut leaves of a credential), redacted. */
  message(s: string): string {
    // A message is text: a vendor number kept as a marker (core/lossless-json.ts) is its digits here.
    if (isNumberMarker(s)) return clip(s.slice(NUMBER_MARKER.length), MAX_UPSTREAM_MESSAGE);
    return this.text(clip(s, MAX_UPSTREAM_MESSAGE));
  }
}

const byUpstream = new WeakMap<CredentialBearer, UpstreamRedactor>();

/** The redactor of one upstream, built on first use and kept for the upstream's lifetime. */
export function redactorFor(up: CredentialBearer & Partial<AddressBearer> & NameBearer): UpstreamRedactor {
  let r = byUpstream.get(up);
  if (!r) {
    const names = configuredNames(up);
    byUpstream.set(up, (r = new UpstreamRedactor(configuredSecrets(up), configuredHosts({ baseUrl: up.baseUrl, options: up.options }), names)));
  }
  return r;
}
