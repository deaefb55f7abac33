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
 * number. Only a marker holding the JSON number grammar, as a whole string value, is unquoted, so a
 * vendor string that imitates a marker can at most come back as a number. The check that a body
 * holds no marker is one `includes` (answers to polls are served from a cache, video/answer-cache.ts).
 */

/** A private-use character no vendor field needs, then a fixed tag. */
export const NUMBER_MARKER = '\uE000num:';

const NUMBER = '-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?';
const IS_NUMBER = new RegExp(`^${NUMBER}$`);
const IS_MARKER = new RegExp(`^${NUMBER_MARKER}${NUMBER}$`);

/**
 * A marker as JSON.stringify writes it (U+E000 is not escaped), as a value: after `:`, `,` or `[`,
 * which inside a JSON string are never followed by an unescaped quote, and before `,`, `}`, `]` or
 * the end (a key's closing quote is followed by `:`).
 */
const MARKER_IN_TEXT = new RegExp(`(?<=[:,[])"${NUMBER_MARKER}(${NUMBER})"(?=[,}\\]]|$)`, 'g');

/**
 * Text that may hold a number a double cannot reproduce: 16 or more digits (and points) in a row,
 * an exponent, or a minus zero. Anything else is parsed by JSON.parse directly.
 */
const MAY_LOSE = /[0-9.]{16}|[0-9][eE]|-0(?![1-9])/;

/** Whether `s` is a marker made by `parseLossless`. */
export function isNumberMarker(s: string): boolean {
  return s.charCodeAt(0) === 0xe000 && IS_MARKER.test(s);
}

/** `text` parsed as JSON, each number a double cannot reproduce kept as a marker string. Throws as JSON.parse does. */
export function parseLossless(text: string): Json {
  return JSON.parse(MAY_LOSE.test(text) ? markLossyNumbers(text) : text) as Json;
}

/** JSON text with each marker written back as the number it holds. */
export function restoreNumbers(json: string): string {
  return json.includes(NUMBER_MARKER) ? json.replace(MARKER_IN_TEXT, '$1') : json;
}

/** `value` as JSON text for a client: JSON.stringify, with vendor numbers as the vendor wrote them. */
export function clientJson(value: unknown): string {
  return restoreNumbers(JSON.stringify(value));
}

/**
 * `text` with every number token outside strings that a double cannot reproduce replaced by its
 * marker, quoted. One pass; strings are skipped with the native search for their closing quote.
 * Text that is not JSON is left for JSON.parse to refuse (a token outside the number grammar stays).
 */
function markLossyNumbers(text: string): string {
  const parts: string[] = [];
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      i = stringEnd(text, i);
      continue;
    }
    if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
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
