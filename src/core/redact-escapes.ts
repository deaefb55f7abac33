/**
 * Views of a text in which the one redaction (redact-secrets.ts) finds configured credentials spelt
 * character by character in an escaped form: percent-encoded (a URL or a form, whole or only its
 * special characters, once or twice over), as JSON `\uXXXX` escapes (Go's encoder writes `&`, `<`
 * and `>` so), as C `\xHH` escapes, as HTML character references, or as hex with a separator after
 * each byte (`de:ad:be:ef`, `DE-AD-...`, `de ad ...`, as certificate fingerprints and hex dumps are
 * written). Each view comes with where its characters sit in the text, so that what is found in the
 * view is replaced in the text. Both are built only where a cheap check finds something to decode:
 * the log line of every request goes through here.
 */

/** A text made from another, and where the characters [a, b) of it sit in that other text. */
export interface View {
  view: string;
  span(a: number, b: number): [number, number];
  /** In a decoded view, where each character read from an escape starts. */
  escapes?: number[];
}

const hexValue = (c: number): number =>
  c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
const isHex = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);

/** The byte of two hex digits at `i`, or -1. */
function hexByte(text: string, i: number): number {
  const hi = hexValue(text.charCodeAt(i));
  const lo = hexValue(text.charCodeAt(i + 1));
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/**
 * The families of escapes, each decoded in a view of its own: a text holds one encoding, and a
 * character that introduces another family's escape is a character of the text ("%0a" in an HTML
 * page is three characters). `url` reads "%HH" (a value encoded whole, or only its special
 * characters), `url-twice` also "%25HH" as the byte HH (a URL inside a URL), `form` also "+" as a
 * space, `backslash` reads JSON's `\uXXXX` and C's `\xHH`, `html` reads "&#47;", "&#x2F;", "&amp;".
 * JSON's one-character escapes (`\"`, `\\`, `\/`, `\n`) are left as they are: the values are searched
 * in their JSON-escaped spellings too, and so a backslash never hides the escape after it
 * (`\\u0041` is read as a backslash and "A", wherever the JSON string it sits in starts).
 */
export type Escapes = 'url' | 'url-twice' | 'form' | 'backslash' | 'html';

export const ESCAPES: readonly Escapes[] = ['url', 'url-twice', 'form', 'backslash', 'html'];

/**
 * The families of which `text` holds an escape of a character `wanted` takes: one that some value
 * holds (decoding any other cannot make a value appear, so text with only such escapes, a chat event
 * of non-ASCII text written as `\uXXXX`, gets no view). `form` if `spaced` (a value has a space) and
 * a "+" stands. A few substring searches on text without any escape; each escape is read once.
 */
export function escapesIn(text: string, spaced: boolean, wanted: (c: string) => boolean): Escapes[] | undefined {
  let out: Escapes[] | undefined;
  if (holds(text, '%', 'url', wanted)) (out ??= []).push('url');
  if (holds(text, '%25', 'url-twice', wanted)) (out ??= []).push('url-twice');
  if (spaced && text.includes('+')) (out ??= []).push('form');
  if (holds(text, '\\', 'backslash', wanted)) (out ??= []).push('backslash');
  if (holds(text, '&', 'html', wanted)) (out ??= []).push('html');
  return out;
}

/** Whether an escape of `family` starting with `start` in `text` is of a character `wanted` takes. */
function holds(text: string, start: string, family: Escapes, wanted: (c: string) => boolean): boolean {
  for (let i = text.indexOf(start); i >= 0; i = text.indexOf(start, i + 1)) {
    const e = escapeAt(text, i, family);
    if (e && wanted(e.char)) return true;
  }
  return false;
}

/** The character references of HTML that upstream pages use for what a credential may hold. */
const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** The HTML reference at `i` ("&#47;", "&#x2F;", "&amp;"): its character and length, or undefined. */
function reference(text: string, i: number): { char: string; len: number } | undefined {
  if (text.charCodeAt(i + 1) === 0x23) {
    const hex = (text.charCodeAt(i + 2) | 0x20) === 0x78;
    let j = i + (hex ? 3 : 2);
    let cp = 0;
    const from = j;
    for (; j < text.length && j - from < 8; j++) {
      const c = text.charCodeAt(j);
      const d = hex ? hexValue(c) : c >= 0x30 && c <= 0x39 ? c - 0x30 : -1;
      if (d < 0) break;
      cp = cp * (hex ? 16 : 10) + d;
    }
    if (j === from || text.charCodeAt(j) !== 0x3b || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return undefined;
    return { char: String.fromCodePoint(cp), len: j + 1 - i };
  }
  // The longest name is four letters: the ";" is looked for no further (a search to the end from each "&" would be quadratic).
  let semi = i + 2;
  while (semi <= i + 5 && semi < text.length && text.charCodeAt(semi) !== 0x3b) semi++;
  if (text.charCodeAt(semi) !== 0x3b) return undefined;
  const char = NAMED[text.slice(i + 1, semi).toLowerCase()];
  return char === undefined ? undefined : { char, len: semi + 1 - i };
}

/** The byte of the byte escape of `family` at `i` ("%HH", also "%25HH" in `url-twice`, "\xHH") and its length, or undefined. */
function byteEscape(text: string, i: number, family: Escapes): { byte: number; len: number } | undefined {
  if (family === 'backslash') {
    if (text.charCodeAt(i) !== 0x5c || text.charCodeAt(i + 1) !== 0x78) return undefined;
    const b = hexByte(text, i + 2);
    return b >= 0 ? { byte: b, len: 4 } : undefined;
  }
  if (text.charCodeAt(i) !== 0x25) return undefined;
  // "%25" then two hex digits: the "%" of an encoding itself encoded.
  if (family === 'url-twice' && text.startsWith('25', i + 1)) {
    const twice = hexByte(text, i + 3);
    if (twice >= 0) return { byte: twice, len: 5 };
  }
  const b = hexByte(text, i + 1);
  return b >= 0 ? { byte: b, len: 3 } : undefined;
}

/** The character of the UTF-8 sequence of byte escapes at `i`, and its length in `text`; undefined unless well-formed. */
function utf8Escape(text: string, i: number, family: Escapes): { char: string; len: number } | undefined {
  const first = byteEscape(text, i, family);
  if (!first) return undefined;
  const b = first.byte;
  if (b < 0x80) return { char: String.fromCharCode(b), len: first.len };
  const more = b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : 0;
  if (more === 0) return undefined;
  let cp = b & (0x3f >> more);
  let len = first.len;
  for (let k = 0; k < more; k++) {
    const next = byteEscape(text, i + len, family);
    if (!next || next.byte < 0x80 || next.byte > 0xbf) return undefined;
    cp = (cp << 6) | (next.byte & 0x3f);
    len += next.len;
  }
  // Overlong forms and surrogates are not characters.
  if (cp < [0x80, 0x800, 0x10000][more - 1]! || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return undefined;
  return { char: String.fromCodePoint(cp), len };
}

/** The escape of `family` at `i` and its length, or undefined when none starts there. */
function escapeAt(text: string, i: number, family: Escapes): { char: string; len: number } | undefined {
  switch (family) {
    case 'html':
      return reference(text, i);
    case 'backslash': {
      if (text.charCodeAt(i + 1) !== 0x75) return utf8Escape(text, i, family);
      const hi = hexByte(text, i + 2);
      const lo = hexByte(text, i + 4);
      return hi < 0 || lo < 0 ? undefined : { char: String.fromCharCode(hi * 256 + lo), len: 6 };
    }
    case 'form':
      if (text.charCodeAt(i) === 0x2b) return { char: ' ', len: 1 };
      return utf8Escape(text, i, family);
    default:
      return utf8Escape(text, i, family);
  }
}

/** The characters that start an escape of each family. */
const STARTS: Record<Escapes, string> = { url: '%', 'url-twice': '%', form: '%+', backslash: '\\', html: '&' };

/** `text` with every escape of `family` decoded; undefined when it holds none. */
export function decodedView(text: string, family: Escapes): View | undefined {
  const starts = STARTS[family];
  const at = new Int32Array(text.length + 1);
  let view = '';
  let n = 0;
  const escapes: number[] = [];
  for (let i = 0; i < text.length; ) {
    const e = starts.includes(text[i]!) ? escapeAt(text, i, family) : undefined;
    if (e) {
      escapes.push(n);
      view += e.char;
      // A character of two UTF-16 units: both start where its escape does.
      for (let k = 0; k < e.char.length; k++) at[n++] = i;
      i += e.len;
      continue;
    }
    // The run of characters that cannot start an escape, copied at once.
    let j = i + 1;
    while (j < text.length && !starts.includes(text[j]!)) j++;
    view += text.slice(i, j);
    for (; i < j; i++) at[n++] = i;
  }
  at[n] = text.length;
  // Every character of the text is in one of the view's: a match ends where the next character starts.
  return escapes.length > 0 ? { view, span: (a, b) => [at[a]!, at[b]!], escapes } : undefined;
}

/** The separators a hex dump or fingerprint writes between bytes. */
const isSeparator = (c: number): boolean => c === 0x3a || c === 0x2d || c === 0x20;
const isHexOrSeparator = (c: number): boolean => isHex(c) || isSeparator(c);

/**
 * The runs of `text` written as hex bytes with a separator after each (at least `minBytes` bytes:
 * pairs of hex digits, one separator between two; the first and last pair may be glued to more hex
 * digits, as a value quoted inside a longer dump is), each with its hex digits alone: the view in
 * which the plain hex forms of the credentials are searched. Undefined when there is none (a UUID's
 * groups are longer than a byte; a MAC address has six).
 *
 * Cheap where there is none: such a run spans at least 3 * minBytes - 1 characters, so only every
 * that many-th character is probed, a few characters around it tell whether it can be in one, and
 * the run of hex digits and separators around a probe that can is read once.
 */
export function separatedHexView(text: string, minBytes: number): View | undefined {
  const span = 3 * minBytes - 1;
  let found: [number, number][] | undefined;
  let floor = 0;
  for (let i = span - 1; i < text.length; i += span) {
    if (!isHexOrSeparator(text.charCodeAt(i)) || !inSeparatedBytes(text, i)) continue;
    let start = i;
    while (start > floor && isHexOrSeparator(text.charCodeAt(start - 1))) start--;
    let end = i + 1;
    while (end < text.length && isHexOrSeparator(text.charCodeAt(end))) end++;
    // A run shorter than a chain of minBytes holds none (the common case: a word, a number, a UUID's group).
    if (end - start >= span) for (const chain of chainsIn(text, start, end, minBytes)) (found ??= []).push(chain);
    floor = end;
    // The next probe lies past this run.
    i = end - 1;
  }
  if (!found) return undefined;
  const at: number[] = [];
  let view = '';
  for (const [start, end] of found) {
    for (let i = start; i < end; i++) {
      if (isSeparator(text.charCodeAt(i))) continue;
      view += text[i];
      at.push(i);
    }
    // Runs are searched as one text: a space between them keeps a match from joining two.
    view += ' ';
    at.push(end);
  }
  // A match holds hex digits only, each one character of the text.
  return { view, span: (a, b) => [at[a]!, at[b - 1]! + 1] };
}

/**
 * Whether `i` may be in the pairs-and-separators part of a chain ("de:ad:be"): a separator between
 * two hex digits within two characters of it, and another three characters before or after that one.
 * Every character of that part of a chain of three bytes or more passes; a UUID's does not.
 */
function inSeparatedBytes(text: string, i: number): boolean {
  for (let p = i - 2; p <= i + 2; p++)
    if (isSeparator(text.charCodeAt(p)) && isHex(text.charCodeAt(p - 1)) && isHex(text.charCodeAt(p + 1)) && (isSeparator(text.charCodeAt(p - 3)) || isSeparator(text.charCodeAt(p + 3))))
      return true;
  return false;
}

/**
 * The chains of at least `minBytes` groups in the run [start, end) of hex digits and separators: groups
 * between single separators, each of two digits but the first and last, which may have more.
 */
function chainsIn(text: string, start: number, end: number, minBytes: number): [number, number][] {
  const out: [number, number][] = [];
  let chainStart = -1;
  let groups = 0;
  const close = (at: number) => {
    if (groups >= minBytes) out.push([chainStart, at]);
    chainStart = -1;
    groups = 0;
  };
  for (let g = start; g <= end; ) {
    let e = g;
    while (e < end && !isSeparator(text.charCodeAt(e))) e++;
    const len = e - g;
    if (len < 2) close(g);
    else if (len === 2 && chainStart >= 0) groups++;
    else {
      // A longer group ends the chain before it (as its last) and starts the next (as its first).
      if (len > 2 && chainStart >= 0) {
        groups++;
        close(e);
      }
      chainStart = g;
      groups = 1;
    }
    if (e >= end) {
      close(e);
      break;
    }
    g = e + 1;
  }
  return out;
}
