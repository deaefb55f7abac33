import type { Json } from './json.js';

/**
 * Vendor answers carried to the client losslessly (spec: unknown vendor fields come back as the
 * vendor sent them, under a job's `vendor_data`). JSON.parse reads every number as a double, so
 * `9007199254740993` came back as `...992`, a 30-digit integer in exponent form, `1e400` as `null`
 * and `-0` as `0`; Node 20 has neither JSON.parse source text access nor JSON.rawJSON to avoid it.
 *
 * So a vendor's answer is parsed by `parseLossless`: a number whose text a double cannot reproduce
 * (more significant digits than survive, out of the double's range, a negative zero) becomes a
 * marker STRING, NUMBER_MARKER followed by the number's exact text; every other value is what
 * JSON.parse gives. Being a string, a marker passes unchanged through the adapters (which read a
 * mapped number with `typeof v === 'number'` or `Number(v)`: a marker is no number to them, NaN),
 * the redaction (which leaves markers alone, core/redact.ts), the vendor_data bound and the store,
 * on SQLite and PostgreSQL alike (U+E000 is ordinary text to both, unlike U+0000).
 *
 * Where a job goes to a client as JSON text, `restoreNumbers` writes each marker back as the bare
 * number. Only a marker holding the JSON number grammar, as a whole string value, is unquoted.
 *
 * A string that merely looks like a marker (a client's prompt or metadata, a vendor's field) must come
 * back as that string, not as a number. So a string beginning with U+E000 is the gateway's own: every
 * string that arrives beginning with it (in a client's body, `escapeMarkerLookalikes`; in a vendor's
 * answer, `parseLossless`) is kept behind a second tag, STRING_MARKER, which `restoreNumbers` takes
 * off again. Such strings are as rare as the private-use character itself; text without one costs a
 * search for it. The same JSON text goes upstream (http/executor.ts), so a vendor gets the client's
 * string as it was sent. The check that a body holds no tag is one `includes` (answers to polls are
 * served from a cache, video/answer-cache.ts).
 */

/** What every tag of the gateway's begins with: a private-use character no vendor field needs. */
const TAG = '\uE000';

/** A private-use character no vendor field needs, then a fixed tag. */
export const NUMBER_MARKER = `${TAG}num:`;

/** Stands before a string that arrived beginning with TAG: the rest is that string. */
export const STRING_MARKER = `${TAG}str:`;

const NUMBER = '-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?';
const IS_NUMBER = new RegExp(`^${NUMBER}$`);
const IS_MARKER = new RegExp(`^${NUMBER_MARKER}${NUMBER}$`);

/**
 * A tagged string as JSON.stringify writes it (U+E000 is not escaped), at its opening quote: after
 * `:`, `,`, `[`, `{` or the text's start, which inside a JSON string are never followed by an
 * unescaped quote (a closing quote is never followed by U+E000). Either a marker, as a value (before
 * `,`, `}`, `]` or the end; a key's closing quote is followed by `:`), its number captured; or the
 * opening of a string behind STRING_MARKER, key or value.
 */
const TAGGED_IN_TEXT = new RegExp(`(?<=^|[:,[{])"(?:${NUMBER_MARKER}(${NUMBER})"(?=[,}\\]]|$)|${STRING_MARKER})`, 'g');

/** A string's first character written as an escape of U+E000 in JSON text. */
const ESCAPED_TAG = /\\u[eE]000/;

/**
 * Text that may hold a number a double cannot reproduce: 16 or more digits (and points) in a row,
 * an exponent, or a minus zero. Anything else is parsed by JSON.parse directly.
 */
const MAY_LOSE = /[0-9.]{16}|[0-9][eE]|-0(?![1-9])/;

/** Whether `s` is a marker made by `parseLossless`. */
export function isNumberMarker(s: string): boolean {
  return s.charCodeAt(0) === 0xe000 && IS_MARKER.test(s);
}

/**
 * A vendor's figure as a number: a JSON number as it is, a marker as the double nearest its text
 * (`4.00000000000000000001` is 4, `1e400` Infinity, for the caller's bounds to judge), anything else
 * undefined. For figures the gateway computes with (a duration it bills); vendor_data keeps the text.
 */
export function vendorNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  return typeof v === 'string' && isNumberMarker(v) ? Number(v.slice(NUMBER_MARKER.length)) : undefined;
}

/**
 * `text` parsed as JSON, each number a double cannot reproduce kept as a marker string and each
 * string beginning with U+E000 behind STRING_MARKER. Throws as JSON.parse does.
 */
export function parseLossless(text: string): Json {
  const lossy = MAY_LOSE.test(text);
  const tagged = mayHoldTag(text);
  return JSON.parse(lossy || tagged ? internalText(text, lossy, tagged) : text) as Json;
}

/**
 * JSON text from a client with each string (key or value) beginning with U+E000 put behind
 * STRING_MARKER, so that none is taken for a marker; any other text as it is, after one search.
 */
export function escapeMarkerLookalikes(text: string): string {
  return mayHoldTag(text) ? internalText(text, false, true) : text;
}

/** One string from outside (a form field, a file name), as `escapeMarkerLookalikes` keeps it. */
export function escapeMarkerLookalike(s: string): string {
  return s.charCodeAt(0) === 0xe000 ? STRING_MARKER + s : s;
}

/** JSON text with each marker written back as the number it holds, and each escaped string as it came. */
export function restoreNumbers(json: string): string {
  return json.includes(TAG) ? json.replace(TAGGED_IN_TEXT, restoreTagged) : json;
}

const restoreTagged = (_match: string, number: string | undefined): string => number ?? '"';

/** One string as it leaves the gateway outside JSON (a form field): a marker's number, an escaped string as it came. */
export function restoreString(s: string): string {
  if (s.charCodeAt(0) !== 0xe000) return s;
  if (s.startsWith(STRING_MARKER)) return s.slice(STRING_MARKER.length);
  return isNumberMarker(s) ? s.slice(NUMBER_MARKER.length) : s;
}

/** `value` as JSON text for a client: JSON.stringify, with vendor numbers as the vendor wrote them. */
export function clientJson(value: unknown): string {
  return restoreNumbers(JSON.stringify(value));
}

/** Whether JSON text may hold a string beginning with U+E000: the character itself, or its escape. */
function mayHoldTag(text: string): boolean {
  return text.includes(TAG) || (text.includes('\\u') && ESCAPED_TAG.test(text));
}

/**
 * `text` with (`numbers`) every number token outside strings that a double cannot reproduce replaced
 * by its marker, quoted, and (`strings`) STRING_MARKER put at the start of every string whose first
 * character is U+E000, written as it is or escaped. One pass; strings are skipped with the native
 * search for their closing quote. Text that is not JSON is left for JSON.parse to refuse (a token
 * outside the number grammar stays).
 */
function internalText(text: string, numbers: boolean, strings: boolean): string {
  const parts: string[] = [];
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      if (strings && opensWithTag(text, i + 1)) {
        parts.push(text.slice(copied, i + 1), STRING_MARKER);
        copied = i + 1;
      }
      i = stringEnd(text, i);
      continue;
    }
    if (numbers && (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39))) {
      let j = i + 1;
      while (j < text.length && isNumberChar(text.charCodeAt(j))) j++;
      const token = text.slice(i, j);
      if (IS_NUMBER.test(token) && !doubleKeeps(token)) {
        parts.push(text.slice(copied, i), JSON.stringify(NUMBER_MARKER + token));
        copied = j;
      }
      i = j;
      continue;
    }
    i++;
  }
  if (parts.length === 0) return text;
  parts.push(text.slice(copied));
  return parts.join('');
}

/** Whether the string content starting at `at` begins with U+E000, as it is or as `\uE000` (any case). */
function opensWithTag(text: string, at: number): boolean {
  const c = text.charCodeAt(at);
  if (c === 0xe000) return true;
  return c === 0x5c /* backslash */ && text.charCodeAt(at + 1) === 0x75 /* u */ && ESCAPED_TAG.test(text.slice(at, at + 6));
}

/** The index after the string opened at `open` (the text's end when it is never closed). */
function stringEnd(text: string, open: number): number {
  let q = open;
  for (;;) {
    q = text.indexOf('"', q + 1);
    if (q < 0) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(q - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return q + 1;
  }
}

function isNumberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d;
}

/** Whether the double JSON.parse makes of `token` writes back as the same number. */
function doubleKeeps(token: string): boolean {
  const v = Number(token);
  if (!Number.isFinite(v) || Object.is(v, -0)) return false;
  // At most 15 significant digits and no exponent: always exact to a double's shortest form.
  if (token.length <= 15 && !/[eE]/.test(token)) return true;
  return canonical(token) === canonical(String(v));
}

/** A number's text as sign, significant digits and exponent: `1.50e2` and `150` are both `15e1`. */
function canonical(t: string): string {
  const m = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(t);
  if (!m) return t;
  const fraction = m[3] ?? '';
  const digits = (m[2]! + fraction).replace(/^0+/, '');
  if (digits === '') return '0';
  const significant = digits.replace(/0+$/, '');
  const exponent = Number(m[4] ?? 0) - fraction.length + (digits.length - significant.length);
  return `${m[1]}${significant}e${exponent}`;
}
