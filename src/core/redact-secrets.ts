import { dumpRanges } from './redact-dumps.js';
import { decodedView, ESCAPES, type Escapes, escapesIn, separatedHexView } from './redact-escapes.js';
import { hasHexRun } from './redact-shapes.js';
import { base64Form, compileCut, type CutForms, cutRanges, type Form, plainForm, prefixMin } from './redact-cut.js';
import { compileStraddles, straddleRanges, type Straddles } from './redact-straddle.js';
import { base64Runs, canonical, joinedView, matches, replaceRanges, whole } from './redact-views.js';

/**
 * The exact credentials of the one redaction (redact.ts): the values configured for an upstream
 * (and those minted for it at run time), compiled once into the patterns that find them in text in
 * the spellings upstreams echo them in.
 */

/** Shorter configured values are not searched for: replacing every "abc" in a message hides nothing. */
export const MIN_SECRET_LENGTH = 8;

/** A line of a multi-line secret shorter than this counts only when it is base64 (see compileSecrets). */
const MIN_LINE_LENGTH = 24;
const BASE64_LINE = /^[A-Za-z0-9+/]+={0,2}$/;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Removes `secrets` from `text`: the exact values in any case (also JSON-escaped), their hex in any
 * case (also with a separator between bytes), the base64 text holding one, and each of these spelt
 * with escaped characters (percent-encoded, `\uXXXX`, `\xHH`, HTML references; redact-escapes.ts),
 * and where the text was cut, the first characters of any of these (redact-cut.ts). Cheap on text with nothing to hide: the hex forms are searched only where a run of hex digits (or
 * of separated hex bytes) is long enough to hold one, the base64 forms in a joined copy of the text
 * only where a line wrap or a "\/" could cut one (see joinedView), and a decoded copy is made only
 * where an escape stands.
 */
export function removeSecrets(text: string, secrets: Secrets): string {
  if (!secrets.pattern) return text;
  // First, on the text as it came: the lines of a hex dump are read as they were printed.
  let out = secrets.hex ? replaceRanges(text, dumpRanges(text, secrets.hex, secrets.hexMin, secrets.cut)) : text;
  out = replaceRanges(out, matches(whole(out), secrets.pattern));
  if (secrets.hex) {
    if (hasHexRun(out, secrets.hexMin)) out = replaceRanges(out, matches(whole(out), secrets.hex));
    const separated = separatedHexView(out, secrets.hexMin / 2);
    if (separated) out = replaceRanges(out, matches(separated, secrets.hex));
  }
  if (secrets.encoded) {
    const wrapped = joinedView(out);
    const joined = wrapped ?? whole(out);
    const found = base64Runs(joined, secrets.encoded);
    if (wrapped) {
      // A value wrapped into lines (a long token in a message wrapped at 76 columns, or cut by a "\n"
      // in a JSON string), and hex cut into lines, as `xxd -p` prints it.
      found.push(...matches(wrapped, secrets.pattern));
      if (secrets.hex && hasHexRun(wrapped.view, secrets.hexMin)) found.push(...matches(wrapped, secrets.hex));
    }
    // What a cut left of a credential: after the whole values, which leave nothing to find there.
    if (secrets.cut) found.push(...cutRanges(joined, secrets.cut));
    out = replaceRanges(out, found);
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
  if (secrets.encoded) found.push(...base64Runs(decoded, secrets.encoded));
  if (secrets.cut) found.push(...cutRanges(decoded, secrets.cut));
  if (secrets.straddles) found.push(...straddleRanges(text, decoded, secrets.straddles));
  return replaceRanges(text, found);
}

/** Whether every unit of a character is one of `chars`. */
function wantedIn(chars: ReadonlySet<string>): (c: string) => boolean {
  return (c) => {
    for (let k = 0; k < c.length; k++) if (!chars.has(canonical(c[k]!))) return false;
    return true;
  };
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
  /** The forms whose prefixes are removed where text was cut (redact-cut.ts). */
  readonly cut?: CutForms;
  /** The values without the first or last characters an escape of a decoded view may take (redact-straddle.ts). */
  readonly straddles?: Straddles;
}

export const NO_SECRETS: Secrets = { values: [], hexMin: 0 };

export function compileSecrets(configured: Iterable<string>): Secrets {
  const set = new Set<string>();
  const hex = new Set<string>();
  const encoded = new Set<string>();
  // Each form once, with the fewest characters of a prefix of it that a cut must not leave.
  const cut = new Map<string, Form>();
  // Also with every "/" escaped as "\/": some JSON encoders (PHP's, Go's with SetEscapeHTML) do.
  const add = (s: string, min: number) => {
    for (const form of s.includes('/') ? [s, s.replace(/\//g, '\\/')] : [s]) {
      set.add(form);
      cut.set(`p${form}`, plainForm(form, min));
    }
  };
  for (const v of configured) {
    if (typeof v !== 'string' || v.length < MIN_SECRET_LENGTH) continue;
    const min = prefixMin(v);
    add(v, min);
    // As a proxy quoting a Basic Authorization header, or a vendor echoing a token it decoded, shows it.
    for (const form of base64Forms(v)) {
      encoded.add(form);
      // The cut compares base64url text as base64: the standard form stands for both.
      if (!/[-_]/.test(form)) cut.set(`b${form}`, base64Form(form, Math.ceil((min * 4) / 3)));
    }
    // As a header dump or a debugging proxy shows it; its bytes, so whatever precedes it, it is there whole.
    const hexForm = Buffer.from(v, 'utf8').toString('hex');
    hex.add(hexForm);
    cut.set(`p${hexForm}`, plainForm(hexForm, 2 * min));
    // As it appears inside a JSON string (a private key's newlines, a quote in a password).
    const escaped = JSON.stringify(v).slice(1, -1);
    if (escaped !== v) add(escaped, min);
    // Each line of a multi-line secret (a PEM body quoted in part) counts on its own; a line of base64
    // from the shortest value searched for, so the short last line of a PEM body counts too.
    if (v.includes('\n'))
      for (const line of v.split(/\r?\n/))
        if (line.length >= MIN_LINE_LENGTH || (line.length >= MIN_SECRET_LENGTH && BASE64_LINE.test(line))) add(line, prefixMin(line));
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
    cut: compileCut([...cut.values()]),
    straddles: compileStraddles(values, forms),
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
