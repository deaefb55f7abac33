/**
 * Base64 text of tens of megabytes (a video a vendor returns inside its JSON answer), checked and
 * decoded from the answer's own bytes, a bounded slice per turn of the event loop. Made a JS string
 * whole, 60 MB of base64 cost ~50 ms to copy out, ~70 ms for one character-class pattern and ~35 ms
 * to decode, each in one go while every other request waited (bench/inline-stall.ts). Here the text
 * is read in pieces of PIECE_CHARS: each piece becomes a short-lived string of the young generation
 * and is decoded with Node's native decoder, and the loop is given back every TURN_CHARS.
 *
 * Node's decoder reads both alphabets (`+/` and `-_`), skips any other character and stops at an
 * "=" that is not at the end, so a piece of whole four-character groups was all base64 exactly when
 * it decodes to three bytes per group: that is the check, at no cost beyond the decoding.
 */

/** Characters decoded at once: whole groups of four, and a string small enough to be a young object. */
const PIECE_CHARS = 64 * 1024;

/** Characters handled before the event loop is given back (~1-3 ms of a core). */
export const TURN_CHARS = 2 * 1024 * 1024;

/** Both alphabets and the padding: what may be base64 at all, before the strict rules. */
const NOT_BASE64 = /[^A-Za-z0-9+/=_-]/;

const MINUS = 0x2d;
const UNDERSCORE = 0x5f;
const PLUS = 0x2b;
const SLASH = 0x2f;
const EQUALS = 0x3d;

export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Whether every byte of `text` is a base64 character of either alphabet or "=" (what the loose
 * check of a lifted answer string needs; the strict rules come with decoding). A piece that does not
 * decode whole (padding, or a character outside the alphabets) is matched with the pattern instead.
 */
export async function isBase64Text(text: Buffer): Promise<boolean> {
  const scratch = Buffer.allocUnsafe((PIECE_CHARS / 4) * 3);
  let sinceTurn = 0;
  for (let at = 0; at < text.length; at += PIECE_CHARS) {
    const end = Math.min(text.length, at + PIECE_CHARS);
    const piece = text.toString('latin1', at, end);
    const whole = end - at === PIECE_CHARS && scratch.write(piece, 0, 'base64') === scratch.length;
    if (!whole && NOT_BASE64.test(piece)) return false;
    sinceTurn += end - at;
    if (sinceTurn >= TURN_CHARS && end < text.length) {
      sinceTurn = 0;
      await nextTurn();
    }
  }
  return true;
}

/**
 * The bytes of strict base64 held as bytes (`text`), or undefined: one alphabet (standard or
 * URL-safe, not mixed), padding only at the end and only to complete the last group, nothing else.
 * The same rules as video/inline-output.ts `strictBase64` for a string, over a bounded piece per turn.
 */
export async function decodeStrictBase64(text: Buffer): Promise<Buffer | undefined> {
  const pad = endsWithPad(text, 2) ? 2 : endsWithPad(text, 1) ? 1 : 0;
  const data = text.length - pad;
  // Padded: whole groups of four. Unpadded: a last group of one character holds no whole byte.
  if (pad > 0 ? text.length % 4 !== 0 : data % 4 === 1) return undefined;
  const out = Buffer.allocUnsafeSlow(Math.floor((data * 6) / 8));
  let written = 0;
  let urlSafe = false;
  let standard = false;
  let sinceTurn = 0;
  for (let at = 0; at < text.length; at += PIECE_CHARS) {
    const end = Math.min(text.length, at + PIECE_CHARS);
    const piece = text.subarray(at, end);
    // The decoder reads both alphabets at once; a text of both is neither.
    urlSafe ||= piece.includes(MINUS) || piece.includes(UNDERSCORE);
    standard ||= piece.includes(PLUS) || piece.includes(SLASH);
    if (urlSafe && standard) return undefined;
    const n = out.write(text.toString('latin1', at, end), written, 'base64');
    written += n;
    // A whole piece before the last decodes to three bytes a group, or something in it was not read.
    if (end < text.length && n !== ((end - at) / 4) * 3) return undefined;
    sinceTurn += end - at;
    if (sinceTurn >= TURN_CHARS && end < text.length) {
      sinceTurn = 0;
      await nextTurn();
    }
  }
  return written === out.length ? out : undefined;
}

function endsWithPad(text: Buffer, n: number): boolean {
  if (text.length < n) return false;
  for (let i = text.length - n; i < text.length; i++) if (text[i] !== EQUALS) return false;
  return true;
}
