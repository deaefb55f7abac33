import type { View } from './redact-escapes.js';
import { REDACTED } from './redact-shapes.js';

/**
 * The views of a text in which the one redaction's exact credentials (redact-secrets.ts) are
 * searched beside the text itself, and the helpers that carry what is found in a view back to the
 * text: the case the patterns compare in, the text with its line wraps taken out (for wrapped
 * base64), and the base64 runs that hold an encoded credential.
 */

/**
 * A UTF-16 unit as the case-insensitive patterns compare it (a regular expression's `i` without `u`):
 * upper-cased, unless that takes it out of ASCII's reach or into several units.
 */
export function canonical(unit: string): string {
  const u = unit.toUpperCase();
  return u.length !== 1 || (unit.charCodeAt(0) >= 0x80 && u.charCodeAt(0) < 0x80) ? unit : u;
}

/** The text as its own view. */
export const whole = (text: string): View => ({ view: text, span: sameSpan });
const sameSpan = (a: number, b: number): [number, number] => [a, b];

/**
 * Where in the text each match of `re` in the view sits, overlapping ones too: two credentials may
 * overlap in a text (one's last characters the other's first), and a search that went on after the
 * first left the second's rest in clear. Each position is tried once, as a failing search tries it.
 */
export function matches(v: View, re: RegExp): [number, number][] {
  const out: [number, number][] = [];
  re.lastIndex = 0;
  for (let m = re.exec(v.view); m !== null; m = re.exec(v.view)) {
    out.push(v.span(m.index, m.index + m[0].length));
    re.lastIndex = m.index + 1;
  }
  return out;
}

/** `text` with each of `ranges` (overlapping or not, in any order) replaced by REDACTED. */
export function replaceRanges(text: string, ranges: [number, number][]): string {
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
export function base64Runs(v: View, encoded: RegExp): [number, number][] {
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
 * `text` without what can sit inside a credential or a base64 run without being part of it: the
 * line breaks of a wrapped encoding (MIME wraps at 76 columns, PEM at 64) or of a long value wrapped
 * in a message, raw or JSON-escaped ("\n", "\r\n"), where the line goes on without a space (a
 * character that is not whitespace, a quote or a backslash stands on each side); and the backslash
 * of a JSON-escaped "\/". Undefined when there is nothing to take out, the common case, found with
 * a few substring searches.
 */
export function joinedView(text: string): View | undefined {
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

/** Whether `text` holds a line break that wraps a line (see wrapAt). */
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
 * character of a credential stands before it and one after it (or a JSON-escaped "\/"); else 0.
 * Whitespace, a quote and a backslash (a JSON escape's, or the escaped one of "\\n", which is no
 * line break) are not: a line that ends or starts with one does not go on into the next.
 */
function wrapAt(text: string, i: number): number {
  let len = 0;
  if (text.startsWith('\r\n', i)) len = 2;
  else if (text.charCodeAt(i) === 0x0a) len = 1;
  else if (text.startsWith('\\r\\n', i)) len = 4;
  else if (text.startsWith('\\n', i)) len = 2;
  if (len === 0 || i === 0 || !goesOn(text.charCodeAt(i - 1))) return 0;
  const next = text.charCodeAt(i + len);
  return goesOn(next) || (next === 0x5c && text.charCodeAt(i + len + 1) === 0x2f) ? len : 0;
}

/** Whether a line may go on through a character: not whitespace, a quote or a backslash. */
const goesOn = (c: number): boolean => c > 0x20 && c !== 0x22 && c !== 0x5c && c !== 0x7f && c !== 0xa0 && c !== 0x2028 && c !== 0x2029;

