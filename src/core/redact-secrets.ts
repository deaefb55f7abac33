import { REDACTED } from './redact-shapes.js';

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
 * Removes `secrets` (exact values in any case, also in their JSON-escaped form, and the base64 text
 * holding one) from `text`. Cheap on text with nothing to hide.
 */
export function removeSecrets(text: string, secrets: Secrets): string {
  let out = secrets.pattern ? text.replace(secrets.pattern, REDACTED) : text;
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

/** A compiled set of exact values to remove. */
export interface Secrets {
  readonly values: readonly string[];
  /** One case-insensitive alternation over every value, longest first; undefined when there is none. */
  readonly pattern?: RegExp;
  /** One alternation over the base64 and base64url forms of each configured value (see base64Forms). */
  readonly encoded?: RegExp;
}

export const NO_SECRETS: Secrets = { values: [] };

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
