import { hasHexRun, REDACTED } from './redact-shapes.js';

/**
 * The exact credentials of the one redaction (redact.ts): the values configured for an upstream
 * (and those minted for it at run time), compiled once into the patterns that find them in text in
 * the spellings upstreams echo them in.
 */

/** Shorter configured values are not searched for: replacing every "abc" in a message hides nothing. */
export const MIN_SECRET_LENGTH = 8;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Removes `secrets` from `text`: the exact values in any case (also JSON-escaped), their hex in any
 * case, and the base64 text holding one. Cheap on text with nothing to hide: the hex forms are
 * searched only where a run of hex digits is long enough to hold one, and the base64 forms in a
 * joined copy of the text only where a line wrap or a "\/" could cut one (see joinedView).
 */
export function removeSecrets(text: string, secrets: Secrets): string {
  let out = secrets.pattern ? text.replace(secrets.pattern, REDACTED) : text;
  if (secrets.hex && hasHexRun(out, secrets.hexMin)) out = out.replace(secrets.hex, REDACTED);
  if (secrets.encoded) out = redactEncoded(out, secrets.encoded);
  return out;
}

/** The characters of base64 and base64url text, padding aside. */
const isBase64Char = (c: number): boolean =>
  (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x2b || c === 0x2f || c === 0x5f || c === 0x2d;

/**
 * Replaces each run of base64 characters that holds a match of `encoded` (with its padding) by
 * REDACTED. The whole run goes: the characters at the edges of the matched part still carry some
 * bits of the secret, and the rest is whatever was encoded with it ("user:" before a Basic password).
 * A run goes on across a line wrap and a JSON-escaped "\/" (searched in the joined view, replaced
 * in the text). Linear: a run is read backwards no further than the end of the last one replaced,
 * and the search resumes after the run.
 */
function redactEncoded(text: string, encoded: RegExp): string {
  const joined = joinedView(text);
  const view = joined?.view ?? text;
  // Where character i of the view sits in the text (and where its end does, for i = view.length).
  const at = (i: number): number => (joined ? joined.at[i]! : i);
  let out = '';
  let copied = 0;
  let done = 0;
  encoded.lastIndex = 0;
  for (let m = encoded.exec(view); m !== null; m = encoded.exec(view)) {
    let start = m.index;
    while (start > done && isBase64Char(view.charCodeAt(start - 1))) start--;
    let end = m.index + m[0].length;
    while (end < view.length && isBase64Char(view.charCodeAt(end))) end++;
    for (let pad = 0; pad < 2 && view.charCodeAt(end) === 0x3d; pad++) end++;
    out += text.slice(copied, at(start)) + REDACTED;
    copied = at(end - 1) + 1;
    done = end;
    encoded.lastIndex = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * `text` without what can sit inside a base64 run without being part of it: the line breaks of a
 * wrapped encoding (MIME wraps at 76 columns, PEM at 64), raw or JSON-escaped ("\n", "\r\n"), when
 * a base64 character stands on each side; and the backslash of a JSON-escaped "\/". `at` maps each
 * character of the view to its place in `text`. Undefined when there is nothing to take out, the
 * common case, found with a few substring searches.
 */
function joinedView(text: string): { view: string; at: Int32Array } | undefined {
  if (!text.includes('\\/') && !hasWrap(text)) return undefined;
  const at = new Int32Array(text.length + 1);
  let view = '';
  let n = 0;
  for (let i = 0; i < text.length; ) {
    const skip = text.charCodeAt(i) === 0x5c && text.charCodeAt(i + 1) === 0x2f ? 1 : wrapAt(text, i);
    if (skip > 0) {
      i += skip;
      continue;
    }
    // The run of characters kept, copied at once.
    let j = i + 1;
    while (j < text.length && text.charCodeAt(j) !== 0x5c && text.charCodeAt(j) !== 0x0a && text.charCodeAt(j) !== 0x0d) j++;
    view += text.slice(i, j);
    for (; i < j; i++) at[n++] = i;
  }
  at[n] = text.length;
  return { view, at };
}

/** Whether `text` holds a line break between two base64 characters. */
function hasWrap(text: string): boolean {
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) if (wrapAt(text, i - (text.charCodeAt(i - 1) === 0x0d ? 1 : 0)) > 0) return true;
  for (let i = text.indexOf('\\n'); i >= 0; i = text.indexOf('\\n', i + 2)) {
    const r = i >= 2 && text.charCodeAt(i - 1) === 0x72 && text.charCodeAt(i - 2) === 0x5c ? i - 2 : i;
    if (wrapAt(text, r) > 0) return true;
  }
  return false;
}

/**
 * The length of the line break starting at `i` ("\r\n", "\n", or the same JSON-escaped) when a
 * base64 character (or a JSON-escaped "\/") stands before it and one after it; else 0.
 */
function wrapAt(text: string, i: number): number {
  let len = 0;
  if (text.startsWith('\r\n', i)) len = 2;
  else if (text.charCodeAt(i) === 0x0a) len = 1;
  else if (text.startsWith('\\r\\n', i)) len = 4;
  else if (text.startsWith('\\n', i)) len = 2;
  if (len === 0 || i === 0 || !isBase64Char(text.charCodeAt(i - 1))) return 0;
  const next = text.charCodeAt(i + len);
  return isBase64Char(next) || (next === 0x5c && text.charCodeAt(i + len + 1) === 0x2f) ? len : 0;
}

/** A compiled set of exact values to remove. */
export interface Secrets {
  readonly values: readonly string[];
  /** One case-insensitive alternation over every value (and its JSON spellings), longest first; undefined when there is none. */
  readonly pattern?: RegExp;
  /** One case-insensitive alternation over the hex of each value. */
  readonly hex?: RegExp;
  /** The length of the shortest hex form: text without that many hex digits in a row holds none. */
  readonly hexMin: number;
  /** One alternation over the base64 and base64url forms of each configured value (see base64Forms). */
  readonly encoded?: RegExp;
}

export const NO_SECRETS: Secrets = { values: [], hexMin: 0 };

export function compileSecrets(configured: Iterable<string>): Secrets {
  const set = new Set<string>();
  const hex = new Set<string>();
  const encoded = new Set<string>();
  // Also with every "/" escaped as "\/": some JSON encoders (PHP's, Go's with SetEscapeHTML) do.
  const add = (s: string) => {
    set.add(s);
    if (s.includes('/')) set.add(s.replace(/\//g, '\\/'));
  };
  for (const v of configured) {
    if (typeof v !== 'string' || v.length < MIN_SECRET_LENGTH) continue;
    add(v);
    // As a proxy quoting a Basic Authorization header, or a vendor echoing a token it decoded, shows it.
    for (const form of base64Forms(v)) encoded.add(form);
    // As a header dump or a debugging proxy shows it; its bytes, so whatever precedes it, it is there whole.
    hex.add(Buffer.from(v, 'utf8').toString('hex'));
    // As it appears inside a JSON string (a private key's newlines, a quote in a password).
    const escaped = JSON.stringify(v).slice(1, -1);
    if (escaped !== v) add(escaped);
    // Each line of a multi-line secret (a PEM body quoted in part) counts on its own.
    if (v.includes('\n')) for (const line of v.split(/\r?\n/)) if (line.length >= 24) add(line);
  }
  const values = [...set].sort((a, b) => b.length - a.length);
  if (values.length === 0) return NO_SECRETS;
  const forms = [...encoded].sort((a, b) => b.length - a.length);
  const hexForms = [...hex].sort((a, b) => b.length - a.length);
  return {
    values,
    // In any case: a vendor may echo a key upper-cased ("SK-..." in an error code or a header dump).
    // Base64 is not searched that way: its case is part of what it encodes. Hex is: either case is the same bytes.
    pattern: new RegExp(values.map(escapeRegExp).join('|'), 'gi'),
    hex: new RegExp(hexForms.join('|'), 'gi'),
    hexMin: hexForms[hexForms.length - 1]!.length,
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
