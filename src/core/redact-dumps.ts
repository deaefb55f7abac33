import { CUT_MARK, type CutForms, cutRanges } from './redact-cut.js';

/**
 * Hex dumps, as a debugging proxy or a vendor's support output prints a request: lines of an offset,
 * the bytes in hex (in groups of one byte, `xxd -g1`, `hexdump -C`, `od -t x1`, or of two or four,
 * `xxd`), and often the same bytes again as characters. A credential of more than a few bytes spans
 * lines, so its hex is cut by offsets and line breaks and the character column shows it in pieces of
 * a line's width, none of which is the credential. The one redaction (redact-secrets.ts) reads the
 * bytes of consecutive dump lines as one run of hex, finds the hex forms of the credentials in it,
 * and removes the matched bytes from each line: their hex and their characters; and, where a dump
 * ends, the first bytes of a credential it ends with (a dump cut short, see redact-cut.ts).
 *
 * Not read: dumps of 16-bit words in the machine's byte order (`hexdump` and `od -x` without a
 * byte format print "6b73" for "sk"), and dumps whose lines carry more than an offset before the
 * bytes (a log prefix on every line).
 */

/** One line of a dump: where its bytes sit in the joined hex, and its characters in the text. */
interface Line {
  /** The joined hex digits [from, to) are this line's. */
  from: number;
  to: number;
  /** Where in the text each character of the line's character column starts (one a byte), and where the column ends. */
  column: number[];
}

/** The most hex digits a group has (`xxd -g8`), and the most bytes a line has (`xxd -c64`). */
const MAX_GROUP = 16;
const MAX_BYTES = 64;

const isHex = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);

/**
 * Where in `text` each byte of a match of `hex` (the credentials' hex forms, at least `minDigits`
 * long) in a dump sits: the hex digits of each line it covers, and their characters. Given `cut`,
 * also those of the first bytes of a credential that a dump ends with (it was cut, or what it
 * shows was; see redact-cut.ts). Linear: a line is read once, and only where a line starts with
 * an offset (cheap to rule out elsewhere).
 */
export function dumpRanges(text: string, hex: RegExp, minDigits: number, cut?: CutForms): [number, number][] {
  if (!hasOffsetLine(text)) return [];
  const lines: Line[] = [];
  const digits: number[] = [];
  let joined = '';
  // Where the last dump line ends (after its line break): a line starting there goes on its run of hex.
  let lastEnd = -1;
  const breaks = lineBreaks(text);
  for (let start = 0, escaped = false; start < text.length; ) {
    const next = breaks(start);
    const line = readLine(text, start, escaped);
    if (line) {
      // A dump that does not go on from the last one: their runs must not join, and it ends where
      // the redaction looks for what a cut leaves.
      if (start !== lastEnd && joined.length > 0) {
        joined += CUT_MARK;
        for (let k = 0; k < CUT_MARK.length; k++) digits.push(-1);
      }
      lines.push({ from: joined.length, to: joined.length + line.hex.length, column: line.column });
      joined += line.hex;
      digits.push(...line.places);
      lastEnd = next?.start ?? -1;
    }
    if (!next) break;
    ({ start, escaped } = next);
  }
  const found: [number, number][] = [];
  if (joined.length >= minDigits) {
    hex.lastIndex = 0;
    for (let m = hex.exec(joined); m !== null; m = hex.exec(joined)) {
      found.push([m.index, m.index + m[0].length]);
      // Two credentials may overlap (see matches).
      hex.lastIndex = m.index + 1;
    }
  }
  if (cut) found.push(...cutRanges({ view: joined, span: (a, b) => [a, b] }, cut));
  found.sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  // In order of their starts: the lines before one are passed over once.
  let first = 0;
  for (const [a, b] of found) {
    while (lines[first]!.to <= a) first++;
    for (let k = first; k < lines.length && lines[k]!.from < b; k++) {
      const l = lines[k]!;
      const from = Math.max(a, l.from);
      const to = Math.min(b, l.to);
      out.push([digits[from]!, digits[to - 1]! + 1]);
      // The characters of the bytes matched: a byte cut in half by the match goes too.
      const lo = Math.floor((from - l.from) / 2);
      const hi = Math.min(Math.ceil((to - l.from) / 2), l.column.length - 1);
      if (hi > lo) out.push([l.column[lo]!, l.column[hi]!]);
    }
  }
  return out;
}

/** Whether a line of `text` starts with what reads as an offset: the test that spares every other text the rest. */
function hasOffsetLine(text: string): boolean {
  if (offsetEnd(text, 0) > 0) return true;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) if (offsetEnd(text, i + 1) > 0) return true;
  for (let i = text.indexOf('\\n'); i >= 0; i = text.indexOf('\\n', i + 2)) if (offsetEnd(text, i + 2) > 0) return true;
  return false;
}

/** Where the offset at the start of a line (spaces, 4 to 16 hex digits, a ":" or not, a space) ends, or -1. */
function offsetEnd(text: string, start: number): number {
  let i = start;
  while (i < start + 8 && text.charCodeAt(i) === 0x20) i++;
  const offset = i;
  while (i < offset + 17 && isHex(text.charCodeAt(i))) i++;
  if (i - offset < 4 || i - offset > 16) return -1;
  if (text.charCodeAt(i) === 0x3a) i++;
  return text.charCodeAt(i) === 0x20 ? i : -1;
}

/**
 * Where the line after the one at a position starts (after "\n", "\r\n" or their JSON escapes),
 * and whether its break was escaped; asked of positions in order, each kind of break is searched
 * for once past the last one found (searching both from every line would read the text once a line).
 */
function lineBreaks(text: string): (start: number) => { start: number; escaped: boolean } | undefined {
  const find = (s: string, from: number) => {
    const i = text.indexOf(s, from);
    return i < 0 ? Infinity : i;
  };
  let raw = -1;
  let escaped = -1;
  return (start) => {
    if (raw < start) raw = find('\n', start);
    if (escaped < start) escaped = find('\\n', start);
    if (raw === Infinity && escaped === Infinity) return undefined;
    return raw < escaped ? { start: raw + 1, escaped: false } : { start: escaped + 2, escaped: true };
  };
}

/**
 * The dump line at `start`, if one is there: an offset (4 to 16 hex digits, a ":" or not), then
 * groups of hex digits of one size (the last may be shorter) between single spaces (or two in the
 * middle of `hexdump -C`'s sixteen bytes), then the characters: its hex digits, where each sits in
 * the text, and where its characters do (see column). `escaped`: the line began after a JSON "\n".
 */
function readLine(text: string, start: number, escaped: boolean): { hex: string; places: number[]; column: number[] } | undefined {
  let i = offsetEnd(text, start);
  if (i < 0) return undefined;
  while (text.charCodeAt(i) === 0x20) i++;
  let hex = '';
  const places: number[] = [];
  let size = 0;
  for (;;) {
    const g = i;
    while (i < g + MAX_GROUP + 1 && isHex(text.charCodeAt(i))) i++;
    const len = i - g;
    // Not a group: a run of an odd length (but where the text was cut, after a group, in a byte), a
    // longer one than the first, or too many bytes.
    const cutHere = size > 0 && len % 2 === 1 && (i === text.length || text.startsWith(CUT_MARK, i));
    if (len === 0 || (len % 2 === 1 && !cutHere) || (size > 0 && len > size) || len > MAX_GROUP || (hex.length + len) / 2 > MAX_BYTES) {
      i = g;
      break;
    }
    size ||= len;
    hex += text.slice(g, i);
    for (let k = g; k < i; k++) places.push(k);
    let spaces = 0;
    while (text.charCodeAt(i + spaces) === 0x20) spaces++;
    const middle = spaces === 2 && size === 2 && hex.length === 16 && isHex(text.charCodeAt(i + 2));
    if (len < size || (spaces !== 1 && !middle) || !isHex(text.charCodeAt(i + spaces))) break;
    i += spaces;
  }
  if (hex.length < 2) return undefined;
  return { hex, places, column: column(text, i, hex.length / 2, escaped) };
}

/**
 * Where each of the first `bytes` characters of the character column after `i` starts, and where the
 * last ends: after spaces and a "|" or ">", up to the line's end. In a JSON string (`escaped`) an
 * escape ("\\", "\"", "\u0000") is one character, and "\n" or "\r" ends the line.
 */
function column(text: string, i: number, bytes: number, escaped: boolean): number[] {
  while (text.charCodeAt(i) === 0x20) i++;
  if (text.charCodeAt(i) === 0x7c || text.charCodeAt(i) === 0x3e) i++;
  const at: number[] = [];
  while (at.length < bytes && i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x0a || c === 0x0d) break;
    let len = 1;
    if (escaped && c === 0x5c) {
      const e = text[i + 1];
      if (e === 'n' || e === 'r' || e === undefined) break;
      len = e === 'u' ? 6 : 2;
    }
    at.push(i);
    i += len;
  }
  at.push(Math.min(i, text.length));
  return at;
}
