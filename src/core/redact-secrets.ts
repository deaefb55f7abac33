import { decodedView, ESCAPES, type Escapes, escapesIn, separatedHexView, type View } from './redact-escapes.js';
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
 * case (also with a separator between bytes), the base64 text holding one, and each of these spelt
 * with escaped characters (percent-encoded, `\uXXXX`, `\xHH`, HTML references; redact-escapes.ts).
 * Cheap on text with nothing to hide: the hex forms are searched only where a run of hex digits (or
 * of separated hex bytes) is long enough to hold one, the base64 forms in a joined copy of the text
 * only where a line wrap or a "\/" could cut one (see joinedView), and a decoded copy is made only
 * where an escape stands.
 */
export function removeSecrets(text: string, secrets: Secrets): string {
  if (!secrets.pattern) return text;
  let out = text.replace(secrets.pattern, REDACTED);
  if (secrets.hex) {
    if (hasHexRun(out, secrets.hexMin)) out = out.replace(secrets.hex, REDACTED);
    const separated = separatedHexView(out, secrets.hexMin / 2);
    if (separated) out = replaceRanges(out, matches(separated, secrets.hex));
  }
  if (secrets.encoded) {
    const joined = joinedView(out);
    out = replaceRanges(out, base64Runs(joined ?? whole(out), secrets.encoded));
  }
  // Escaped characters, decoded, one family of escapes at a time.
  const families = escapesIn(out, secrets.spaced === true, secrets.wanted!);
  if (families) for (const family of families) out = removeDecoded(out, secrets, family);
  return out;
}

function removeDecoded(text: string, secrets: Secrets, family: Escapes): string {
  const decoded = decodedView(text, family);
  if (!decoded) return text;
  const found = matches(decoded, secrets.decoded ?? secrets.pattern!);
  return replaceRanges(text, secrets.encoded ? [...found, ...base64Runs(decoded, secrets.encoded)] : found);
}

/**
 * A UTF-16 unit as the case-insensitive patterns compare it (a regular expression's `i` without `u`):
 * upper-cased, unless that takes it out of ASCII's reach or into several units.
 */
function canonical(unit: string): string {
  const u = unit.toUpperCase();
  return u.length !== 1 || (unit.charCodeAt(0) >= 0x80 && u.charCodeAt(0) < 0x80) ? unit : u;
}

/** Whether every unit of a character is one of `chars`. */
function wantedIn(chars: ReadonlySet<string>): (c: string) => boolean {
  return (c) => {
    for (let k = 0; k < c.length; k++) if (!chars.has(canonical(c[k]!))) return false;
    return true;
  };
}

/** The text as its own view. */
const whole = (text: string): View => ({ view: text, span: sameSpan });
const sameSpan = (a: number, b: number): [number, number] => [a, b];

/** Where in the text each match of `re` in the view sits. */
function matches(v: View, re: RegExp): [number, number][] {
  const out: [number, number][] = [];
  re.lastIndex = 0;
  for (let m = re.exec(v.view); m !== null; m = re.exec(v.view)) out.push(v.span(m.index, m.index + m[0].length));
  return out;
}

/** `text` with each of `ranges` (overlapping or not, in any order) replaced by REDACTED. */
function replaceRanges(text: string, ranges: [number, number][]): string {
  if (ranges.length === 0) return text;
  ranges.sort((a, b) => a[0] - b[0]);
  let out = '';
  let copied = 0;
  for (const [start, end] of ranges) {
    if (end <= copied) continue;
    out += start >= copied ? text.slice(copied, start) + REDACTED : '';
    copied = end;
  }
  return out + text.slice(copied);
}

/** The characters of base64 and base64url text, padding aside. */
const isBase64Char = (c: number): boolean =>
  (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x2b || c === 0x2f || c === 0x5f || c === 0x2d;

/**
 * Where in the text each run of base64 characters of the view that holds a match of `encoded` (with
 * its padding) sits. The whole run goes: the characters at the edges of the matched part still carry
 * some bits of the secret, and the rest is whatever was encoded with it ("user:" before a Basic
 * password). Linear: a run is read backwards no further than the end of the last one found, and the
 * search resumes after the run.
 */
function base64Runs(v: View, encoded: RegExp): [number, number][] {
  const { view } = v;
  const out: [number, number][] = [];
  let done = 0;
  encoded.lastIndex = 0;
  for (let m = encoded.exec(view); m !== null; m = encoded.exec(view)) {
    let start = m.index;
    while (start > done && isBase64Char(view.charCodeAt(start - 1))) start--;
    let end = m.index + m[0].length;
    while (end < view.length && isBase64Char(view.charCodeAt(end))) end++;
    for (let pad = 0; pad < 2 && view.charCodeAt(end) === 0x3d; pad++) end++;
    out.push(v.span(start, end));
    done = end;
    encoded.lastIndex = end;
  }
  return out;
}

/**
 * `text` without what can sit inside a base64 run without being part of it: the line breaks of a
 * wrapped encoding (MIME wraps at 76 columns, PEM at 64), raw or JSON-escaped ("\n", "\r\n"), when
 * a base64 character stands on each side; and the backslash of a JSON-escaped "\/". Undefined when
 * there is nothing to take out, the common case, found with a few substring searches.
 */
function joinedView(text: string): View | undefined {
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
  // A match ends with a character the view kept: one character of the text.
  return { view, span: (a, b) => [at[a]!, at[b - 1]! + 1] };
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
  /** Whether a value holds a space (a form may write it "+"). */
  readonly spaced?: boolean;
  /** Whether a character is made of UTF-16 units the values or their base64 forms hold (see canonical): an escape of any other hides none. */
  readonly wanted?: (c: string) => boolean;
  /**
   * The pattern searched in decoded views when a value itself holds what reads as an escape ("%41"
   * in a password): the values and those readings of them. Else `pattern` is.
   */
  readonly decoded?: RegExp;
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
  // A value's own escape-like characters are decoded in the view as the text's are.
  const readings = new Set<string>();
  for (const v of values)
    for (const family of ESCAPES) {
      const read = decodedView(v, family)?.view;
      if (read !== undefined && read.length >= MIN_SECRET_LENGTH && !set.has(read)) readings.add(read);
    }
  const decoded = readings.size === 0 ? undefined : [...values, ...readings].sort((a, b) => b.length - a.length);
  return {
    values,
    // In any case: a vendor may echo a key upper-cased ("SK-..." in an error code or a header dump).
    // Base64 is not searched that way: its case is part of what it encodes. Hex is: either case is the same bytes.
    pattern: new RegExp(values.map(escapeRegExp).join('|'), 'gi'),
    hex: new RegExp(hexForms.join('|'), 'gi'),
    hexMin: hexForms[hexForms.length - 1]!.length,
    encoded: new RegExp(forms.map(escapeRegExp).join('|'), 'g'),
    spaced: values.some((v) => v.includes(' ')),
    wanted: wantedIn(new Set([...(decoded ?? values), ...forms].flatMap((v) => v.split('').map(canonical)))),
    ...(decoded ? { decoded: new RegExp(decoded.map(escapeRegExp).join('|'), 'gi') } : {}),
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
