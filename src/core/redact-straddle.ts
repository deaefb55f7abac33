import type { View } from './redact-escapes.js';
import { canonical } from './redact-views.js';

/**
 * Credentials an escape reaches into. A decoded view (redact-escapes.ts) reads a text's escapes left
 * to right, so an escape begun just before a credential and completed by its first characters takes
 * them: "%" then "4b..." reads as "K" and then the rest, "\u00" then "4b..." too, "\" then "u0041..."
 * as "A". The same at the end: a credential ending in "%4" or "\" is completed by the text after it.
 * Where the rest of the credential is spelt with escapes of its own (its "/" as "%2F"), neither the
 * text nor its view holds it whole. So at each escape of a view, the credentials whose first
 * characters end the escape's text are looked for in the view after it, and those whose last
 * characters begin it, in the view before it: then the text holds the credential itself, from
 * inside that escape.
 */

/** A credential with its first characters (`head`) or last (`tail`) left out: `rest`. */
interface Part {
  readonly rest: string;
  /** A base64 form: compared in its case, and the run it ends goes with it (see base64Runs). */
  readonly base64: boolean;
}

export interface Straddles {
  /** The parts, by their head read backwards from its last character (see Trie): what may follow an escape ending with it. */
  readonly heads: Trie;
  /** The parts, by their tail read forwards: what may come before an escape beginning with it. */
  readonly tails: Trie;
}

/**
 * Parts keyed by their head or tail, one canonical UTF-16 unit (see canonical) per level. The text
 * at each escape is looked up one character at a time, and the walk stops at the first character
 * no part has there: most escapes cost one map lookup and no string is made for them. Folding each
 * of the 16 candidate keys of every escape into a string of its own cost ~3 us an escape, half a
 * second on 1 MB of "&#x41;" an upstream had answered.
 */
interface Trie {
  readonly next: Map<number, Trie>;
  /** The parts whose whole head (or tail) is the path to here. */
  readonly parts: Part[];
}

const trie = (): Trie => ({ next: new Map(), parts: [] });

/** The most characters an escape can take from a credential's start ("u0041" of "\u0041"), and from its end ("%F0%9F%94" of a four-byte character). */
const MAX_HEAD = 5;
const MAX_TAIL = 11;

const isHexDigit = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);

/** A unit's code as the case-insensitive comparison sees it: ASCII letters upper-cased at once, the rest by canonical. */
function unitAt(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c < 0x80) return c >= 0x61 && c <= 0x7a ? c - 0x20 : c;
  return canonical(s[i]!).charCodeAt(0);
}

/** Files `part` under `key`, read from its last character back (`backwards`) or from its first. */
function add(root: Trie, key: string, backwards: boolean, part: Part): void {
  let node = root;
  for (let k = 0; k < key.length; k++) {
    const c = unitAt(key, backwards ? key.length - 1 - k : k);
    let child = node.next.get(c);
    if (!child) node.next.set(c, (child = trie()));
    node = child;
  }
  node.parts.push(part);
}

/**
 * The parts of `values`: without a head that can end an escape (it ends with a hex or decimal
 * digit or ";"), or without a tail that starts one ("%", "\" or "&" and what follows); and of the
 * base64 forms `encoded`, without such a head (they hold no "%", "\" or "&").
 */
export function compileStraddles(values: readonly string[], encoded: readonly string[]): Straddles | undefined {
  const heads = trie();
  const tails = trie();
  let any = false;
  const byHead = (v: string, base64: boolean) => {
    for (let k = 1; k <= MAX_HEAD && k < v.length; k++) {
      const last = v.charCodeAt(k - 1);
      if (isHexDigit(last) || last === 0x3b) {
        add(heads, v.slice(0, k), true, { rest: v.slice(k), base64 });
        any = true;
      }
    }
  };
  for (const v of values) {
    byHead(v, false);
    for (let k = 1; k <= MAX_TAIL && k < v.length; k++)
      if ('%\\&'.includes(v[v.length - k]!)) {
        add(tails, v.slice(-k), false, { rest: v.slice(0, -k), base64: false });
        any = true;
      }
  }
  for (const form of encoded) byHead(form, true);
  return any ? { heads, tails } : undefined;
}

/**
 * Where in `text` each credential sits that an escape of its decoded view `v` reaches into. A few
 * lookups per escape, and a comparison only where the escape's text is a head or tail of one.
 */
export function straddleRanges(text: string, v: View, straddles: Straddles): [number, number][] {
  const out: [number, number][] = [];
  const { view } = v;
  // The end of the last base64 run read: a later match inside it ends there too (each run is read once).
  let runEnd = -1;
  for (const a of v.escapes ?? []) {
    const c = view.charCodeAt(a);
    // A character of two UTF-16 units stands for one escape.
    const next = c >= 0xd800 && c <= 0xdbff ? a + 2 : a + 1;
    const [s, e] = v.span(a, next);
    const inside = e - s - 1;
    let node: Trie | undefined = straddles.heads;
    for (let k = 1; k <= Math.min(MAX_HEAD, inside) && (node = node.next.get(unitAt(text, e - k))); k++)
      for (const part of node.parts) {
        if (!sameAt(view, next, part)) continue;
        let end = next + part.rest.length;
        if (part.base64) end = runEnd = end > runEnd ? endOfRun(view, end) : runEnd;
        out.push([e - k, v.span(next, end)[1]]);
      }
    node = straddles.tails;
    for (let k = 1; k <= Math.min(MAX_TAIL, inside) && (node = node.next.get(unitAt(text, s + k - 1))); k++)
      for (const part of node.parts)
        if (a >= part.rest.length && sameAt(view, a - part.rest.length, part)) out.push([v.span(a - part.rest.length, a)[0], s + k]);
  }
  return out;
}

/** Whether the view holds the part's rest at `from`. */
function sameAt(view: string, from: number, part: Part): boolean {
  const { rest } = part;
  if (from + rest.length > view.length) return false;
  if (part.base64) return view.startsWith(rest, from);
  for (let k = 0; k < rest.length; k++) if (unitAt(view, from + k) !== unitAt(rest, k)) return false;
  return true;
}

const isBase64Char = (c: number): boolean =>
  (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x2b || c === 0x2f || c === 0x5f || c === 0x2d;

/** The end of the base64 run (with its padding) that goes on at `b`: its last characters carry bits of the credential too. */
function endOfRun(view: string, b: number): number {
  while (b < view.length && isBase64Char(view.charCodeAt(b))) b++;
  for (let pad = 0; pad < 2 && view.charCodeAt(b) === 0x3d; pad++) b++;
  return b;
}
