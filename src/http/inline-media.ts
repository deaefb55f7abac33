import { randomBytes } from 'node:crypto';
import type { Json } from '../core/json.js';

/**
 * Media a vendor returns inside a JSON answer (Veo's `bytesBase64Encoded`, fal's `data:` URL): tens
 * of megabytes of one base64 string, beside a few hundred bytes of everything else. Parsing such an
 * answer whole is cheap (one long string), but an answer of the same size made of a million small
 * fields is not: 63 MB of them held the event loop ~2.4 s in JSON.parse alone, and every poll of
 * the job did it again. So only the media is allowed to be large: it is found by a byte scan and
 * lifted out before parsing, and the rest of the answer is held to a small cap.
 *
 * The scan reads one byte every MIN_MEDIA_CHARS (a string at least that long cannot fall between two
 * probes); a probe on a base64 character looks for the quotes around it with the native byte search,
 * and the string between is lifted when it is base64 (after a `data:...,` head) and a value, not a
 * key. Every byte between two quotes is searched at most twice, so the scan is linear, and a few
 * native passes over the media (its copy out as a string and one character-class check) are the rest.
 *
 * Why a string of base64 between two unescaped quotes is a string of the answer: between the end of
 * one string and the start of the next, JSON writes a ":" or a ",", which base64 never holds. And a
 * lifted string goes back into the parsed value in place of a placeholder no upstream can guess, so
 * the adapters see what the vendor sent.
 */

/** A shorter string stays in the rest of the answer (and counts against its cap). */
export const MIN_MEDIA_CHARS = 64 * 1024;

/** More media strings than any vendor returns (Veo: up to four videos): the others stay in the rest. */
const MAX_MEDIA = 16;

/** The longest `data:<type>;base64,` head of a data: URL that is read. */
const MAX_DATA_HEAD = 256;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;

/** Both base64 alphabets and the padding: a lifted string is checked strictly where it is used as media. */
const NOT_BASE64 = /[^A-Za-z0-9+/=_-]/;

const isBase64Byte = (c: number): boolean =>
  (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x2f && c <= 0x39) || c === 0x2b || c === 0x3d || c === 0x5f || c === 0x2d;
const isSpace = (c: number | undefined): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** One lifted string: the bytes between its quotes, [from, to), and its text. */
interface Lifted {
  from: number;
  to: number;
  text: string;
}

/** An answer with its media lifted out: the rest (to parse), and how to put the media back. */
export interface WithoutMedia {
  rest: Buffer;
  /** Puts the lifted strings back into the parsed rest, in place. */
  restore(value: Json): Json;
  /** Bytes lifted out. */
  lifted: number;
}

/** `raw` with its media strings lifted out; undefined when it holds none. */
export function liftMedia(raw: Buffer): WithoutMedia | undefined {
  const found: Lifted[] = [];
  // Everything before `floor` has been read: the next probe starts past the last string examined.
  let floor = 0;
  for (let p = MIN_MEDIA_CHARS - 1; p < raw.length && found.length < MAX_MEDIA; p += MIN_MEDIA_CHARS) {
    if (p < floor || !isBase64Byte(raw[p]!)) continue;
    const close = raw.indexOf(QUOTE, p);
    if (close < 0) break;
    const open = raw.lastIndexOf(QUOTE, p);
    floor = close + 1;
    if (open < 0 || close - open - 1 < MIN_MEDIA_CHARS || escaped(raw, open) || isKey(raw, close)) continue;
    const start = mediaStart(raw, open + 1, close);
    if (start < 0) continue;
    const text = raw.toString('latin1', open + 1, close);
    if (NOT_BASE64.test(start === open + 1 ? text : text.slice(start - open - 1))) continue;
    found.push({ from: open + 1, to: close, text });
  }
  if (found.length === 0) return undefined;

  const tag = `media:${randomBytes(12).toString('hex')}:`;
  const parts: Buffer[] = [];
  const byPlaceholder = new Map<string, string>();
  let at = 0;
  let lifted = 0;
  for (const [i, f] of found.entries()) {
    const placeholder = `${tag}${i}`;
    byPlaceholder.set(placeholder, f.text);
    parts.push(raw.subarray(at, f.from), Buffer.from(placeholder, 'latin1'));
    at = f.to;
    lifted += f.to - f.from;
  }
  parts.push(raw.subarray(at));
  return { rest: Buffer.concat(parts), restore: (value) => putBack(value, byPlaceholder), lifted };
}

/** Whether the quote at `i` is escaped (an odd run of backslashes before it). */
function escaped(raw: Buffer, i: number): boolean {
  let n = 0;
  while (i - n - 1 >= 0 && raw[i - n - 1] === BACKSLASH) n++;
  return n % 2 === 1;
}

/** Whether the string closed at `close` is an object's key (a ":" follows it): keys are never media. */
function isKey(raw: Buffer, close: number): boolean {
  let i = close + 1;
  for (let n = 0; n < 64 && isSpace(raw[i]); n++) i++;
  // After a run of whitespace longer than any encoder writes, the string is taken for a key: it stays.
  return raw[i] === COLON || isSpace(raw[i]);
}

/** Where the base64 of the string [from, to) starts: at `from`, or after a data: URL's head; -1 when neither. */
function mediaStart(raw: Buffer, from: number, to: number): number {
  if (raw.subarray(from, from + 5).toString('latin1').toLowerCase() !== 'data:') return from;
  const head = raw.subarray(from, Math.min(to, from + MAX_DATA_HEAD));
  const comma = head.indexOf(COMMA);
  if (comma < 0 || head.subarray(0, comma).indexOf(BACKSLASH) >= 0) return -1;
  return from + comma + 1;
}

/** `value` with each placeholder string replaced by what it stands for (objects and arrays changed in place). */
function putBack(value: Json, byPlaceholder: ReadonlyMap<string, string>): Json {
  if (typeof value === 'string') return byPlaceholder.get(value) ?? value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = putBack(value[i]!, byPlaceholder);
  } else if (value !== null && typeof value === 'object') {
    // An own "__proto__" (JSON.parse makes one) shadows the prototype's setter: assigning it sets the field.
    for (const k of Object.keys(value)) value[k] = putBack(value[k]!, byPlaceholder);
  }
  return value;
}
