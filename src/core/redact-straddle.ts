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
  /** The parts, by their head (in canonical case): what may follow an escape ending with it. */
  readonly heads: ReadonlyMap<string, readonly Part[]>;
  /** The parts, by their tail: what may come before an escape beginning with it. */
  readonly tails: ReadonlyMap<string, readonly Part[]>;
}

/** The most characters an escape can take from a credential's start ("u0041" of "\u0041"), and from its end ("%F0%9F%94" of a four-byte character). */
const MAX_HEAD = 5;
const MAX_TAIL = 11;

const isHexDigit = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
const fold = (s: string): string => s.split('').map(canonical).join('');

function add(map: Map<string, Part[]>, key: string, part: Part): void {
  const list = map.get(fold(key));
  if (list) list.push(part);
  else map.set(fold(key), [part]);
}

/**
 * The parts of `values`: without a head that can end an escape (it ends with a hex or decimal
 * digit or ";"), or without a tail that starts one ("%", "\" or "&" and what follows); and of the
 * base64 forms `encoded`, without such a head (they hold no "%", "\" or "&").
 */
export function compileStraddles(values: readonly string[], encoded: readonly string[]): Straddles | undefined {
  const heads = new Map<string, Part[]>();
  const tails = new Map<string, Part[]>();
  const byHead = (v: string, base64: boolean) => {
    for (let k = 1; k <= MAX_HEAD && k < v.length; k++) {
      const last = v.charCodeAt(k - 1);
      if (isHexDigit(last) || last === 0x3b) add(heads, v.slice(0, k), { rest: v.slice(k), base64 });
    }
  };
  for (const v of values) {
    byHead(v, false);
    for (let k = 1; k <= MAX_TAIL && k < v.length; k++) if ('%\\&'.includes(v[v.length - k]!)) add(tails, v.slice(-k), { rest: v.slice(0, -k), base64: false });
  }
  for (const form of encoded) byHead(form, true);
  return heads.size + tails.size === 0 ? undefined : { heads, tails };
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
    for (let k = 1; k <= Math.min(MAX_HEAD, inside); k++)
      for (const part of straddles.heads.get(fold(text.slice(e - k, e))) ?? []) {
        if (!sameAt(view, next, part)) continue;
        let end = next + part.rest.length;
        if (part.base64) end = runEnd = end > runEnd ? endOfRun(view, end) : runEnd;
        out.push([e - k, v.span(next, end)[1]]);
      }
    for (let k = 1; k <= Math.min(MAX_TAIL, inside); k++)
      for (const part of straddles.tails.get(fold(text.slice(s, s + k))) ?? [])
        if (a >= part.rest.length && sameAt(view, a - part.rest.length, part)) out.push([v.span(a - part.rest.length, a)[0], s + k]);
  }
  return out;
}

/** Whether the view holds the part's rest at `from`. */
function sameAt(view: string, from: number, part: Part): boolean {
  const { rest } = part;
  if (from + rest.length > view.length) return false;
  if (part.base64) return view.startsWith(rest, from);
  for (let k = 0; k < rest.length; k++) if (canonical(view[from + k]!) !== canonical(rest[k]!)) return false;
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
