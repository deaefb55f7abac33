import type { Json, JsonObject } from './json.js';

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

export const REDACTED = '[redacted]';

/** Shorter configured values are not searched for: replacing every "abc" in a message hides nothing. */
const MIN_SECRET_LENGTH = 8;

/** Option names whose string values are credentials (matched against every key, nested included). */
const SECRET_OPTION = /key|secret|token|password|passwd|credential|private|signature|assertion|service_account/i;
/** Option names that look like secrets by the pattern above but hold something else. */
const NOT_SECRET_OPTION = /^(key_file|max_batch_tokens|auth_uri|token_uri|auth_provider_x509_cert_url|client_x509_cert_url|type)$/i;

/** What a shape's match becomes: a replacement string ($1 and the like), or a function of the match and its groups. */
export type Replacement = string | ((match: string, ...groups: (string | undefined)[]) => string);

/**
 * Shapes of credentials, whoever they belong to. Each replacement keeps the label (scheme, parameter
 * name, prefix) so a message still says what was there.
 *
 * Time linear in the text: an attempt of most of these either matches once it has read past its
 * prefix (taking what it read) or fails within a bounded number of characters, or reads a run that
 * no other attempt reads again (an auth token ends at whitespace, which a scheme needs after it).
 * The private-key and JWT shapes are written so; test/core/redact-linear.test.ts tries each shape
 * on runs of its own prefix and alphabet.
 */
export const SHAPES: readonly (readonly [RegExp, Replacement])[] = [
  // PEM private keys, in raw text and JSON-escaped ("\n" as two characters). A BEGIN with no END
  // after it takes the second branch, the rest of the text, which is put back unchanged: no later
  // BEGIN can have an END after it either, and without that branch each later BEGIN would start an
  // attempt reading to the end of the text again (quadratic in a text of many BEGINs).
  [
    /-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----)|[\s\S]*)/g,
    (match, end) => (end === undefined ? match : REDACTED),
  ],
  // Authorization header values: Bearer/Key/Basic/Token schemes, and AWS SigV4's Credential/Signature.
  // A token has a character other than a letter (so "Bearer tokens" stays prose) and never ends in
  // a dot (that one is the sentence's).
  [/\b([Bb]earer|BEARER|Key|Basic|Token)(\s+)(?=[A-Za-z]*[0-9._~+/=:*-])[A-Za-z0-9._~+/=:*-]{5,}[A-Za-z0-9_~+/=*-]/g, `$1$2${REDACTED}`],
  [/\b(Credential|Signature|SignedHeaders)=[^,\s"'&]+/g, `$1=${REDACTED}`],
  // Query-string and form credentials: ?key=..., api-key=..., X-Amz-Signature=..., sig=...
  [
    /\b((?:api[-_]?key|apikey|key|access[-_]?token|refresh[-_]?token|id[-_]?token|token|sig|signature|assertion|client[-_]?secret|password|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|ossaccesskeyid)=)[^&\s"'<>]+/gi,
    `$1${REDACTED}`,
  ],
  // "api key provided: XXXX" (a wrong key repeated back, possibly masked).
  [/(api key provided:?\s*)[^\s"',]+/gi, `$1${REDACTED}`],
  // Prefixed API keys: sk-..., sk_live_..., rk-..., pk_...
  [/\b(sk|rk|pk|ak)([-_])[A-Za-z0-9_*.-]{6,}/g, `$1$2${REDACTED}`],
  // Google API keys and OAuth access tokens.
  [/\bAIza[0-9A-Za-z_-]{20,}/g, REDACTED],
  [/\bya29\.[A-Za-z0-9._-]+/g, REDACTED],
  // AWS access key ids (long-term and temporary).
  [/\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g, REDACTED],
  // JWTs (a signed assertion or an id token), at a word start: after a space, a quote, "=", ":", or
  // a "-" inside a longer run of base64url characters. Only the run's first "eyJ" at a word start is
  // tried: the lookbehind rejects one with another before it in the same run, looking back no
  // further than that one. A later one's header ends at the same dot with fewer characters, so it
  // fails when the first does; trying each read the run to its end once per "-eyJ" (quadratic: a
  // 256 KB run of "eyJ-" took 18 s).
  [/\beyJ(?<!\beyJ[A-Za-z0-9_-]*?eyJ)[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, REDACTED],
  // "<uuid>:<hex>" key-id:secret pairs.
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[0-9a-f]{16,}/gi, REDACTED],
  // 32 hex characters on their own: the shape of some cloud resource keys.
  [/\b[0-9a-f]{32}\b/gi, REDACTED],
];

/**
 * Whether `text` may hold one of SHAPES: false only for text in which none can match. Each check
 * is a piece that the shape of the same line needs, looked for in the lowercased text (so a
 * superset: case does not matter here) unless said otherwise. This runs on every log line, the
 * access line of every request included, so it avoids one case-insensitive regular expression with
 * these thirteen alternatives: on a 440-character poll line (a sealed video id in its path) that
 * regex took ~8 us, these plain substring searches and the loops below take a fraction of it.
 * The pieces a random base64url id contains by chance ("key", "eyJ", "sk-" inside a word) are
 * checked together with what their shape needs next to them: with the bare pieces about one sealed
 * id in ten sent its every access line through all the shapes (~20 us each).
 */
export function mayHoldShape(text: string): boolean {
  const l = text.toLowerCase();
  for (const piece of SHAPE_PIECES) if (l.includes(piece)) return true;
  // "Key" and "Token" as Authorization schemes, and "api key provided", have whitespace after the
  // word; as parameters (key=, access_token=) they hold "=", a piece above.
  if (wordBeforeSpace(l, 'key') || wordBeforeSpace(l, 'token')) return true;
  return hasJwtStart(l) || hasKeyPrefix(text) || hasHexRun(l, 16);
}

const SHAPE_PIECES = ['=', 'bearer', 'basic', '-----begin', 'aiza', 'ya29.', 'akia', 'asia'];

/** The whitespace of the shapes' `\s`, tested one character at a time. */
const SPACE = /\s/;

function wordBeforeSpace(l: string, word: string): boolean {
  for (let i = l.indexOf(word); i >= 0; i = l.indexOf(word, i + 1)) {
    const after = i + word.length;
    if (after < l.length && SPACE.test(l[after]!)) return true;
  }
  return false;
}

/** A JWT's start: "eyJ", at least six base64url characters, then a dot. */
function hasJwtStart(l: string): boolean {
  for (let i = l.indexOf('eyj'); i >= 0; ) {
    let end = i + 3;
    while (end < l.length && isBase64UrlLower(l.charCodeAt(end))) end++;
    if (end - i - 3 >= 6 && l.charCodeAt(end) === 0x2e) return true;
    // Every later "eyj" of this run ends at the same place with fewer characters before it, so none
    // passes where this one failed: the search goes on after the run, which is then read once
    // (searching from i + 1 read a run of "eyj" once per "eyj").
    i = l.indexOf('eyj', end);
  }
  return false;
}

/**
 * A prefixed key's start: "sk", "rk", "pk" or "ak", then "-" or "_", at the start of a word.
 * Looked for in `text` itself, as the shape is case-sensitive, so the word start is judged on the
 * very character the shape's `\b` sees (lowercasing can turn a sign such as U+212A into a letter).
 */
function hasKeyPrefix(text: string): boolean {
  for (let i = text.indexOf('k', 1); i >= 0; i = text.indexOf('k', i + 1)) {
    const next = text.charCodeAt(i + 1);
    if ((next === 0x2d || next === 0x5f) && 'srpa'.includes(text[i - 1]!) && (i < 2 || !isWordChar(text.charCodeAt(i - 2)))) return true;
  }
  return false;
}

const isWordChar = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;
const isBase64UrlLower = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a) || c === 0x5f || c === 0x2d;
const isLowerHex = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66);

/**
 * Whether lowercased `l` holds `n` hex digits in a row. Such a run covers at least one position
 * that is a multiple of `n` (counting from n - 1), so only those are probed, and a run is measured
 * only around a probe that is a hex digit.
 */
function hasHexRun(l: string, n: number): boolean {
  for (let i = n - 1; i < l.length; i += n) {
    if (!isLowerHex(l.charCodeAt(i))) continue;
    let start = i;
    let end = i;
    while (start > 0 && isLowerHex(l.charCodeAt(start - 1))) start--;
    while (end + 1 < l.length && isLowerHex(l.charCodeAt(end + 1))) end++;
    if (end - start + 1 >= n) return true;
    // The next probe lies past this run (a later run cannot include a character of this one).
    i = end;
  }
  return false;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Removes `secrets` (exact values in any case, also in their JSON-escaped form, and the base64 text
 * holding one) and every credential shape from `text`. Cheap on text with nothing to hide; idempotent.
 */
export function redact(text: string, secrets: Secrets = NO_SECRETS): string {
  if (text.length < 6) return text;
  let out = secrets.pattern ? text.replace(secrets.pattern, REDACTED) : text;
  if (secrets.encoded) out = redactEncoded(out, secrets.encoded);
  if (!mayHoldShape(out)) return out;
  for (const shape of SHAPES) out = applyShape(out, shape);
  return out;
}

/** One shape applied to every place of `text` it matches. */
export function applyShape(text: string, [re, to]: readonly [RegExp, Replacement]): string {
  // Two calls: replace() has an overload for a string and one for a function, none for either.
  return typeof to === 'string' ? text.replace(re, to) : text.replace(re, to);
}

/** The characters of base64 and base64url text, padding aside. */
const isBase64Char = (c: number): boolean =>
  (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x2b || c === 0x2f || c === 0x5f || c === 0x2d;

/**
 * Replaces each run of base64 characters that holds a match of `encoded` (with its padding) by
 * REDACTED. The whole run goes: the characters at the edges of the matched part still carry some
 * bits of the secret, and the rest is whatever was encoded with it ("user:" before a Basic password).
 * Linear: a run is read backwards no further than the end of the last one replaced, and the search
 * resumes after the run.
 */
function redactEncoded(text: string, encoded: RegExp): string {
  let out = '';
  let copied = 0;
  encoded.lastIndex = 0;
  for (let m = encoded.exec(text); m !== null; m = encoded.exec(text)) {
    let start = m.index;
    while (start > copied && isBase64Char(text.charCodeAt(start - 1))) start--;
    let end = m.index + m[0].length;
    while (end < text.length && isBase64Char(text.charCodeAt(end))) end++;
    for (let pad = 0; pad < 2 && text.charCodeAt(end) === 0x3d; pad++) end++;
    out += text.slice(copied, start) + REDACTED;
    copied = end;
    encoded.lastIndex = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
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

/** A compiled set of exact values to remove. */
export interface Secrets {
  readonly values: readonly string[];
  /** One case-insensitive alternation over every value, longest first; undefined when there is none. */
  readonly pattern?: RegExp;
  /** One alternation over the base64 and base64url forms of each configured value (see base64Forms). */
  readonly encoded?: RegExp;
}

const NO_SECRETS: Secrets = { values: [] };

export function compileSecrets(configured: Iterable<string>): Secrets {
  const set = new Set<string>();
  const encoded = new Set<string>();
  for (const v of configured) {
    if (typeof v !== 'string' || v.length < MIN_SECRET_LENGTH) continue;
    set.add(v);
    // As a proxy quoting a Basic Authorization header, or a vendor echoing a token it decoded, shows it.
    for (const form of base64Forms(v)) encoded.add(form);
    // As it appears inside a JSON string (a private key's newlines, a quote in a password).
    const escaped = JSON.stringify(v).slice(1, -1);
    if (escaped !== v) set.add(escaped);
    // Each line of a multi-line secret (a PEM body quoted in part) counts on its own.
    if (v.includes('\n')) for (const line of v.split(/\r?\n/)) if (line.length >= 24) set.add(line);
  }
  const values = [...set].sort((a, b) => b.length - a.length);
  if (values.length === 0) return NO_SECRETS;
  const forms = [...encoded].sort((a, b) => b.length - a.length);
  return {
    values,
    // In any case: a vendor may echo a key upper-cased ("SK-..." in an error code or a header dump).
    // Base64 is not searched that way: its case is part of what it encodes.
    pattern: new RegExp(values.map(escapeRegExp).join('|'), 'gi'),
    encoded: new RegExp(forms.map(escapeRegExp).join('|'), 'g'),
  };
}

/**
 * The base64 and base64url texts that encoding `value` produces wherever it sits in a longer
 * encoded text. Base64 writes each group of three bytes as four characters, so the encoding of the
 * value depends on where its first byte falls in a group (three cases), and the characters of a
 * group shared with the bytes around it depend on those too. For each case this keeps the groups
 * made of the value's bytes alone: the encoding of its bytes from the 1st, 2nd or 3rd on, cut to a
 * whole number of groups, found in the longer text whatever surrounds the value. Eight bytes, the
 * shortest value searched for, still leave two whole groups (eight characters) in each case.
 */
function base64Forms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const out: string[] = [];
  for (let skip = 0; skip < 3; skip++) {
    const groups = Math.floor((bytes.length - skip) / 3);
    if (groups < 2) continue;
    const b64 = bytes.subarray(skip, skip + groups * 3).toString('base64');
    out.push(b64, b64.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return out;
}

/** The parts of an upstream's configuration that may hold credentials. */
export interface CredentialBearer {
  apiKey?: string;
  options: JsonObject;
}

/**
 * Every credential in an upstream's configuration: the api key, and each string option whose name
 * says it is one (access tokens, AWS secrets, service-account keys inline or as JSON text).
 */
export function configuredSecrets(up: CredentialBearer): string[] {
  const out: string[] = [];
  if (up.apiKey) out.push(up.apiKey);
  collect(up.options, false, out);
  return out;
}

function collect(value: Json | undefined, secret: boolean, out: string[]): void {
  if (typeof value === 'string') {
    if (!secret) return;
    out.push(value);
    // A service account given as its JSON text: its fields are secrets too.
    if (value.trimStart().startsWith('{')) {
      try {
        collect(JSON.parse(value) as Json, true, out);
      } catch {
        // Not JSON after all: the whole value was pushed above.
      }
    }
    return;
  }
  if (Array.isArray(value)) {
    for (const v of value) collect(v, secret, out);
    return;
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const isSecret = secret ? !NOT_SECRET_OPTION.test(k) : SECRET_OPTION.test(k) && !NOT_SECRET_OPTION.test(k);
      collect(v, isSecret, out);
    }
  }
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
    const { pattern, encoded } = this.secrets;
    let out = pattern ? s.replace(pattern, REDACTED) : s;
    if (encoded) out = redactEncoded(out, encoded);
    return out;
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
