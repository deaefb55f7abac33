import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Json } from '../core/json.js';
import { restoreNumbers } from '../core/lossless-json.js';
import { guard } from './streams.js';

/**
 * A JSON request body that may carry media inline (Veo takes an uploaded image or video as
 * `bytesBase64Encoded`: the base64 of a 50 MiB video is 67 MB of one string). Sent the plain way,
 * that string would be copied twice more while the create runs, neither copy counted in the budget
 * of bytes in flight that holds the string itself: `JSON.stringify` writes the whole text again,
 * and undici encodes that text to a Buffer before sending it.
 *
 * So long strings that JSON writes as they are (printable ASCII without a quote or a backslash:
 * base64, a data: URL) are left out of the serialised text, a placeholder no value can guess in
 * their place, and the body is sent as the text around them and, between, each string itself in
 * slices encoded as the stream is read (undici reads it as the socket drains). What the body holds
 * beyond the string is the small rest of the text and a slice or two; its length is known, so it
 * goes with a Content-Length, byte for byte what `JSON.stringify` would have sent.
 */

/** A shorter string stays in the serialised text. */
export const MIN_LIFTED_CHARS = 64 * 1024;

/** The characters of a lifted string encoded to bytes at a time. */
const SLICE_CHARS = 64 * 1024;

/** Characters JSON writes as they are: printable ASCII but `"` and `\`. */
const VERBATIM = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** A body whose long strings are sent from the strings themselves: its bytes, read as sent, and their number. */
export interface LiftedJson {
  stream: Readable;
  length: number;
}

/** The JSON text of `value`, or, when it holds long verbatim strings, the body that sends them uncopied. */
export function encodeJsonBody(value: Json): string | LiftedJson {
  const lifted: string[] = [];
  const mark = `lifted-${randomBytes(16).toString('hex')}-`;
  // Strings as the client sent them (core/lossless-json.ts); a lifted one holds no U+E000 (VERBATIM).
  const text = restoreNumbers(
    JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v !== 'string' || v.length < MIN_LIFTED_CHARS || !VERBATIM.test(v)) return v;
      lifted.push(v);
      return `${mark}${lifted.length - 1}`;
    }),
  );
  if (lifted.length === 0) return text;
  // Text and lifted strings alternate: [text, index, text, index, ..., text]; the quotes stay in the text.
  const pieces = text.split(new RegExp(`${mark}(\\d+)`)).map((p, i) => (i % 2 === 1 ? lifted[Number(p)]! : p));
  let length = 0;
  for (let i = 0; i < pieces.length; i++) length += i % 2 === 1 ? pieces[i]!.length : Buffer.byteLength(pieces[i]!);
  // Not in object mode: the stream holds about one slice ahead of what the socket took. Its chunks
  // cannot fail; undici destroys it when the call is cut, and reports that as the call's failure.
  return { length, stream: guard(Readable.from(chunks(pieces), { objectMode: false, highWaterMark: SLICE_CHARS })) };
}

function* chunks(pieces: string[]): Generator<Buffer> {
  for (let i = 0; i < pieces.length; i++) {
    const s = pieces[i]!;
    if (i % 2 === 0) {
      if (s.length > 0) yield Buffer.from(s);
      continue;
    }
    // A slice of a flat string shares its characters; only the bytes of each slice are made.
    for (let at = 0; at < s.length; at += SLICE_CHARS) yield Buffer.from(s.slice(at, at + SLICE_CHARS), 'latin1');
  }
}
