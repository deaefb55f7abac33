import { randomBytes } from 'node:crypto';
import { isBase64Text } from '../core/base64-steps.js';

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
 * and the string between is lifted when it is base64 (after a `data:...,` head, which stays in the
 * rest) and a value, not a key. Every byte between two quotes is searched at most twice, so the scan
 * is linear; the check that a string is base64 reads it a bounded piece per turn of the event loop
 * (core/base64-steps.ts), so lifting 60 MB never holds the loop for long.
 *
 * Why a string of base64 between two unescaped quotes is a string of the answer: between the end of
 * one string and the start of the next, JSON writes a ":" or a ",", which base64 never holds.
 *
 * A lifted string is never made a JS string (60 MB of it took ~50 ms to copy out and as much again
 * to collect): the parsed rest holds a placeholder no upstream can guess in its place, and
 * `AnswerMedia` hands out its characters as a view of the answer's bytes (`text`), for the video to
 * be decoded from them, or puts it back as a string where a value is wanted whole (`restore`).
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

const isBase64Byte = (c: number): boolean =>
  (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x2f && c <= 0x39) || c === 0x2b || c === 0x3d || c === 0x5f || c === 0x2d;
const isSpace = (c: number | undefined): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** One lifted string's base64: the bytes [from, to) of the answer. */
interface Lifted {
  from: number;
  to: number;
}

/** The media lifted out of one answer, by the placeholder that stands for each in the parsed rest. */
export class AnswerMedia {
  constructor(
    /** Starts every placeholder of this answer (random: no upstream can write one). */
    private readonly tag: string,
    private readonly texts: ReadonlyMap<string, Buffer>,
  ) {}

  /** The base64 characters (a view of the answer's bytes) a placeholder stands for; undefined for any other string. */
  text(value: string): Buffer | undefined {
    return this.texts.get(value);
  }

  /**
   * `value` with each placeholder put back as the string it stands for (objects and arrays changed in
   * place; bytes, such as a video's taken from `text`, left as they are).
   */
  restore<T>(value: T): T {
    return putBack(value, this.tag, this.texts) as T;
  }
}

/** An answer with its media lifted out: the rest (to parse, placeholders in place of the media) and the media. */
export interface WithoutMedia {
  rest: Buffer;
  media: AnswerMedia;
  /** Bytes of the rest, also when it was over the cap and left unassembled. */
  restBytes: number;
}

/**
 * `raw` with its media strings lifted out; undefined when it holds none. A rest over `maxRest` bytes
 * is not assembled (`rest` is then empty): copying tens of MB of it would be a hold of its own.
 */
export async function liftMedia(raw: Buffer, maxRest = Number.POSITIVE_INFINITY): Promise<WithoutMedia | undefined> {
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
    if (start < 0 || !(await isBase64Text(raw.subarray(start, close)))) continue;
    found.push({ from: start, to: close });
  }
  if (found.length === 0) return undefined;

  const tag = `media:${randomBytes(12).toString('hex')}:`;
  const parts: Buffer[] = [];
  const texts = new Map<string, Buffer>();
  let at = 0;
  for (const [i, f] of found.entries()) {
    const placeholder = `${tag}${i}`;
    texts.set(placeholder, raw.subarray(f.from, f.to));
    parts.push(raw.subarray(at, f.from), Buffer.from(placeholder, 'latin1'));
    at = f.to;
  }
  parts.push(raw.subarray(at));
  const restBytes = parts.reduce((n, b) => n + b.length, 0);
  const rest = restBytes > maxRest ? Buffer.alloc(0) : Buffer.concat(parts, restBytes);
  return { rest, media: new AnswerMedia(tag, texts), restBytes };
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

/**
 * `value` with each placeholder replaced by what it stands for (objects and arrays changed in place).
 * A lifted data: URL left its head in the rest, so a placeholder also ends a string.
 */
function putBack(value: unknown, tag: string, texts: ReadonlyMap<string, Buffer>): unknown {
  if (typeof value === 'string') {
    const at = value.indexOf(tag);
    const text = at < 0 ? undefined : texts.get(value.slice(at));
    return text ? value.slice(0, at) + text.toString('latin1') : value;
  }
  if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value)) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = putBack(value[i], tag, texts);
  } else {
    const record = value as Record<string, unknown>;
    // An own "__proto__" (JSON.parse makes one) shadows the prototype's setter: assigning it sets the field.
    for (const k of Object.keys(record)) record[k] = putBack(record[k], tag, texts);
  }
  return value;
}
