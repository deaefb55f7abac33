/**
 * Walking JSON text byte by byte without building any value, for raw-scan.ts. Only for text without
 * a backslash: every string then ends at the next quote (found by native search) and every key is its
 * own bytes. Each function returns the index just past what it walked, or -1 when the text is not the
 * JSON expected there.
 */

/** Where a walk is; the caller's own state rides along in the same object (one per answer). */
export interface JsonCursor {
  raw: Buffer;
  /** The value `wholeNumber` read last. */
  number: number;
  /** How deep `skipValue` is in values nobody looks into. */
  depth: number;
}

/** Called with a member's key, as raw[keyStart, keyEnd), and where its value starts; returns where the value ends, or -1. */
export type Member<W extends JsonCursor> = (w: W, keyStart: number, keyEnd: number, value: number) => number;

/** Deeper than any member of an OpenAI answer; past it the full parse (with its own bound) decides. */
const MAX_SKIPPED_DEPTH = 32;

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const LITERALS = [Buffer.from('true'), Buffer.from('false'), Buffer.from('null')];

/** Walks the object whose `{` is at `i`, handing each member to `member`. */
export function members<W extends JsonCursor>(w: W, i: number, member: Member<W>): number {
  const raw = w.raw;
  i = skipSpace(raw, i + 1);
  if (raw[i] === RBRACE) return i + 1;
  for (;;) {
    if (raw[i] !== QUOTE) return -1;
    const keyEnd = raw.indexOf(QUOTE, i + 1);
    if (keyEnd < 0) return -1;
    const colon = skipSpace(raw, keyEnd + 1);
    if (raw[colon] !== COLON) return -1;
    const end = member(w, i + 1, keyEnd, skipSpace(raw, colon + 1));
    if (end < 0) return -1;
    i = skipSpace(raw, end);
    if (raw[i] === RBRACE) return i + 1;
    if (raw[i] !== COMMA) return -1;
    i = skipSpace(raw, i + 1);
  }
}

/** A whole number written as digits only (no sign, fraction or exponent), at most `max`, into `w.number`. */
export function wholeNumber(w: JsonCursor, at: number, max: number): number {
  const raw = w.raw;
  let n = 0;
  let i = at;
  for (let c = raw[i]; c !== undefined && c >= 0x30 && c <= 0x39; c = raw[++i]) {
    n = n * 10 + (c - 0x30);
    if (n > max) return -1;
  }
  // No digit, or a leading zero (not JSON).
  if (i === at || (raw[at] === 0x30 && i > at + 1)) return -1;
  w.number = n;
  return i;
}

/** Passes over any value. */
export function skipValue(w: JsonCursor, at: number): number {
  const raw = w.raw;
  const c = raw[at];
  if (c === QUOTE) {
    const end = raw.indexOf(QUOTE, at + 1);
    return end < 0 ? -1 : end + 1;
  }
  if (c !== LBRACE && c !== LBRACKET) return skipScalar(raw, at);
  if (w.depth >= MAX_SKIPPED_DEPTH) return -1;
  w.depth++;
  const end = c === LBRACE ? members(w, at, skippedMember) : elements(w, at);
  w.depth--;
  return end;
}

const skippedMember: Member<JsonCursor> = (w, _k0, _k1, at) => skipValue(w, at);

function elements(w: JsonCursor, i: number): number {
  const raw = w.raw;
  i = skipSpace(raw, i + 1);
  if (raw[i] === RBRACKET) return i + 1;
  for (;;) {
    i = skipValue(w, i);
    if (i < 0) return -1;
    i = skipSpace(raw, i);
    if (raw[i] === RBRACKET) return i + 1;
    if (raw[i] !== COMMA) return -1;
    i = skipSpace(raw, i + 1);
  }
}

/** `true`, `false`, `null` or a JSON number. */
function skipScalar(raw: Buffer, at: number): number {
  for (const literal of LITERALS) if (isKey(raw, at, at + literal.length, literal)) return at + literal.length;
  let i = at;
  if (raw[i] === 0x2d /* - */) i++;
  const intStart = i;
  i = digits(raw, i);
  if (i === intStart || (raw[intStart] === 0x30 && i > intStart + 1)) return -1;
  if (raw[i] === 0x2e /* . */) {
    const from = ++i;
    if ((i = digits(raw, i)) === from) return -1;
  }
  if (raw[i] === 0x65 || raw[i] === 0x45 /* e E */) {
    i++;
    if (raw[i] === 0x2b || raw[i] === 0x2d) i++;
    const from = i;
    if ((i = digits(raw, i)) === from) return -1;
  }
  return i;
}

function digits(raw: Buffer, i: number): number {
  for (let c = raw[i]; c !== undefined && c >= 0x30 && c <= 0x39; c = raw[++i]);
  return i;
}

/** Whether raw[start, end) are the bytes of `name`. */
export function isKey(raw: Buffer, start: number, end: number, name: Buffer): boolean {
  if (end - start !== name.length || end > raw.length) return false;
  for (let i = 0; i < name.length; i++) if (raw[start + i] !== name[i]) return false;
  return true;
}

export function skipSpace(b: Buffer, i: number): number {
  while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
  return i;
}
