import type { View } from './redact-escapes.js';
import { canonical } from './redact-views.js';

/**
 * Credentials cut short. Upstream text is bounded before it is kept (a message of a few hundred
 * characters out of a body of a megabyte), and a credential the cut goes through leaves its first
 * characters behind: no longer the value the exact-value layer (redact-secrets.ts) looks for, and
 * no longer anything shaped like a credential. So every cut of upstream text goes through `clip`,
 * which marks it with CUT_MARK, and the redaction removes, where text was cut (its end, and before
 * each "..." or "…", which upstreams write where they shorten a key themselves), the longest prefix
 * of a configured credential ending there (of its plain or JSON-escaped text in any case, its hex,
 * its base64 forms with the run they sit in), also in every decoded view (a cut through a
 * percent-encoded credential), when the prefix has at least `prefixMin` characters.
 *
 * Shorter prefixes stay: five characters of a credential are what vendors show of a key themselves
 * ("sk-ab...") and what its public prefix gives away, and removing every shorter match would garble
 * the end of ordinary messages (the last word matching a credential's first few letters). For a
 * credential shorter than twelve characters the bound is half of it: less than half is left in clear.
 */

/** What `clip` puts where it cut. */
export const CUT_MARK = '...';

/**
 * `text` cut to at most `max` characters (a character of two UTF-16 units is not split), with
 * CUT_MARK after the cut: the one way upstream text is shortened, so the redaction finds where.
 */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  const end = code >= 0xd800 && code <= 0xdbff ? max - 1 : max;
  return `${text.slice(0, end)}${CUT_MARK}`;
}

/** The fewest characters of a prefix of `value` that are removed at a cut: six, or half of a short value. */
export function prefixMin(value: string): number {
  return Math.min(6, Math.ceil(value.length / 2));
}

/** A form of a credential whose prefixes are removed at a cut. */
export interface Form {
  /** Compared in any case (see canonical), or exactly (base64, in either alphabet). */
  readonly text: string;
  readonly anyCase: boolean;
  /** The fewest characters of a prefix that count. */
  readonly min: number;
  /** A base64 form: the whole run of base64 characters the prefix ends goes. */
  readonly base64: boolean;
}

export const plainForm = (text: string, min: number): Form => ({ text, anyCase: true, min, base64: false });
/** A base64 form, in the standard alphabet: base64url text is compared as if written in it. */
export const base64Form = (text: string, min: number): Form => ({ text, anyCase: false, min, base64: true });

/**
 * The compiled forms. A prefix of at least `min` characters ending at a cut ends with a window of
 * `width` (the smallest `min`) characters of its form; each such window is indexed by a hash of its
 * characters (folded, see foldCode) into `buckets`: the entries from `start[b]` to `start[b + 1]`
 * are pairs of a form and the length of the prefix the window ends. A cut that ends no prefix, the
 * common case, costs a hash of a few characters and an empty bucket. Typed arrays, not a map of
 * strings: a service account's key and the JSON text holding it index tens of thousands of windows.
 */
export interface CutForms {
  readonly width: number;
  readonly forms: readonly Form[];
  readonly mask: number;
  readonly start: Int32Array;
  readonly entries: Int32Array;
}

export function compileCut(all: readonly Form[]): CutForms | undefined {
  const forms = all.filter((f) => f.text.length >= f.min);
  if (forms.length === 0) return undefined;
  const width = Math.min(...forms.map((f) => f.min));
  let count = 0;
  for (const f of forms) count += f.text.length - f.min + 1;
  const mask = (1 << Math.max(4, Math.ceil(Math.log2(count)))) - 1;
  // Two passes over the windows: how many fall in each bucket, then where each goes.
  const start = new Int32Array(mask + 2);
  const each = (visit: (bucket: number, form: number, len: number) => void) =>
    forms.forEach((f, i) => {
      for (let len = f.min; len <= f.text.length; len++) visit(hashAt(f.text, len, width) & mask, i, len);
    });
  each((b) => start[b + 1]!++);
  for (let b = 0; b <= mask; b++) start[b + 1]! += start[b]!;
  const entries = new Int32Array(2 * count);
  const filled = start.slice(0, mask + 1);
  each((b, form, len) => {
    const at = 2 * filled[b]!++;
    entries[at] = form;
    entries[at + 1] = len;
  });
  return { width, forms, mask, start, entries };
}

/** A character as the case-insensitive patterns compare it (canonical, for ASCII by arithmetic). */
function caseCode(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c >= 0x61 && c <= 0x7a) return c - 0x20;
  return c < 0x80 ? c : canonical(s[i]!).charCodeAt(0);
}

/** A character folded for the hash: two texts either comparison takes as equal hash alike. */
function foldCode(s: string, i: number): number {
  return base64Code(caseCode(s, i));
}

/** A base64 character, base64url's written as base64's. */
const base64Code = (c: number): number => (c === 0x2d ? 0x2b : c === 0x5f ? 0x2f : c);

/** The hash of the `width` folded characters of `s` before `end`. */
function hashAt(s: string, end: number, width: number): number {
  let h = 0;
  for (let i = end - width; i < end; i++) h = (Math.imul(h, 31) + foldCode(s, i)) | 0;
  return (h ^ (h >>> 15)) >>> 0;
}

/**
 * Where in the text each prefix of a form ending at a cut of the view sits. The cuts are the end of
 * the view and each "..." or "…" (the first dot of a run of them); before each, an escape the cut
 * left unfinished ("%2", "\u00") is passed over, as it is no character of the view. Linear: each
 * cut costs a hash of a few characters, and a comparison only where a window of a form ends there.
 */
export function cutRanges(v: View, cut: CutForms): [number, number][] {
  const { view } = v;
  const out: [number, number][] = [];
  for (let p = view.indexOf('...'); p >= 0; p = view.indexOf('...', p + 3)) if (view.charCodeAt(p - 1) !== 0x2e) cutAt(v, p, cut, out);
  for (let p = view.indexOf('\u2026'); p >= 0; p = view.indexOf('\u2026', p + 1)) cutAt(v, p, cut, out);
  cutAt(v, view.length, cut, out);
  return out;
}

/** Adds to `out` where the prefix of a form that ends at the cut `p` sits in the text, if one does. */
function cutAt(v: View, p: number, cut: CutForms, out: [number, number][]): void {
  let start = prefixStart(v.view, p, cut);
  const q = start < 0 ? p - unfinishedEscape(v.view, p) : p;
  if (q !== p) start = prefixStart(v.view, q, cut);
  if (start < 0) start = separatedPrefixStart(v.view, p, cut);
  if (start >= 0) out.push(v.span(start, p));
}

/** The separators hex with a separator between bytes is written with (see separatedHexView). */
const isSeparator = (c: number): boolean => c === 0x3a || c === 0x2d || c === 0x20;
const isHexDigit = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);

/**
 * The start of the prefix of a hex form ending at `p` written with a separator between bytes
 * ("5a:71:38:57:6d:33..."), or -1: the digits of the run of hex digits and separators before the
 * cut, read as one. Each cut reads back only over such a run, which no cut mark is part of: every
 * character is read for one cut at most.
 */
function separatedPrefixStart(view: string, p: number, cut: CutForms): number {
  let i = p;
  let separated = false;
  while (i > 0 && (isHexDigit(view.charCodeAt(i - 1)) || isSeparator(view.charCodeAt(i - 1)))) {
    separated ||= isSeparator(view.charCodeAt(i - 1));
    i--;
  }
  if (!separated) return -1;
  let digits = '';
  const at: number[] = [];
  for (let k = i; k < p; k++)
    if (!isSeparator(view.charCodeAt(k))) {
      digits += view[k];
      at.push(k);
    }
  const start = prefixStart(digits, digits.length, cut);
  return start < 0 ? -1 : at[start]!;
}

/** The start of the longest prefix of a form that ends at `q`, or -1. */
function prefixStart(view: string, q: number, cut: CutForms): number {
  if (q < cut.width) return -1;
  const b = hashAt(view, q, cut.width) & cut.mask;
  let best = -1;
  for (let k = 2 * cut.start[b]!; k < 2 * cut.start[b + 1]!; k += 2) {
    const form = cut.forms[cut.entries[k]!]!;
    const len = cut.entries[k + 1]!;
    const from = q - len;
    if (from < 0 || (best >= 0 && from >= best) || !sameText(view, from, form, len)) continue;
    best = form.base64 ? runStart(view, from) : from;
  }
  return best;
}

/** Whether the `len` characters of the view from `from` are the first of the form. */
function sameText(view: string, from: number, form: Form, len: number): boolean {
  const { text } = form;
  if (form.anyCase) {
    for (let k = 0; k < len; k++) if (caseCode(view, from + k) !== caseCode(text, k)) return false;
  } else {
    for (let k = 0; k < len; k++) if (base64Code(view.charCodeAt(from + k)) !== base64Code(text.charCodeAt(k))) return false;
  }
  return true;
}

/** The start of the run of base64 characters that reaches `i`: what was encoded with the credential goes with it. */
function runStart(view: string, i: number): number {
  const isBase64 = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x2b || c === 0x2f || c === 0x5f || c === 0x2d;
  while (i > 0 && isBase64(view.charCodeAt(i - 1))) i--;
  return i;
}

/** An escape left unfinished at the end of a text: "%", "%2", "%25", "\", "\u00", "\x4", "&#x2", "&am". */
const UNFINISHED = /(?:%(?:25)?[0-9a-f]?|\\(?:u[0-9a-f]{0,3}|x[0-9a-f]?)?|&(?:#x?[0-9a-f]{0,7}|[a-z]{0,4}))$/i;

/** The length of the escape left unfinished just before `p`, or 0. */
function unfinishedEscape(view: string, p: number): number {
  // Most cuts have no "%", "\" or "&" among the characters before them: no regular expression then.
  let opener = false;
  for (let i = Math.max(0, p - 11); i < p && !opener; i++) {
    const c = view.charCodeAt(i);
    opener = c === 0x25 || c === 0x5c || c === 0x26;
  }
  const m = opener ? UNFINISHED.exec(view.slice(Math.max(0, p - 11), p)) : null;
  return m ? m[0].length : 0;
}
