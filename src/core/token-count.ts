/**
 * Token counting with bounded work per request.
 *
 * Byte-pair tokenizers take time quadratic in the length of one pre-token (a run of letters,
 * spaces or punctuation with nothing to split it), so an input of 200,000 'a's held the event
 * loop for seconds. Here text is fed to the tokenizer in pieces of at most MAX_PIECE_CHARS:
 *
 * - A piece ends, where it can, just before a space or tab that follows a non-space character.
 *   The cl100k and o200k pre-tokenizers never put such a pair in one pre-token, so counting the
 *   pieces apart gives exactly the count of the whole: ordinary text counts exactly.
 * - A stretch of MAX_PIECE_CHARS with no such point (one very long pre-token) is cut where the
 *   limit falls (never inside a surrogate pair); the sum is then an estimate off by about one
 *   token per cut.
 * - Each request counts at most `exactChars` characters with the tokenizer; the rest is estimated
 *   from its UTF-8 size at the rate measured on what was counted, never below one token per four
 *   bytes. Admission works on the estimate and is corrected with the vendor's reported usage, as
 *   for every estimate.
 *
 * The asynchronous count yields to the event loop every SLICE_MS, so health checks and other
 * requests keep being served while a large input is counted.
 */

export const MAX_PIECE_CHARS = 256;
/** Characters one request may count with the tokenizer; see the module comment. */
export const DEFAULT_EXACT_CHARS = 256 * 1024;
/** Tokens per UTF-8 byte assumed for uncounted text, at least (about four bytes per token in English). */
export const MIN_TOKENS_PER_BYTE = 0.25;
const SLICE_MS = 10;

export type Encoder = (text: string) => number;

export class TokenCounter {
  private remaining: number;
  private countedTokens = 0;
  private countedBytes = 0;
  private sliceStart = performance.now();

  constructor(
    private readonly encode: Encoder,
    exactChars = DEFAULT_EXACT_CHARS,
  ) {
    this.remaining = exactChars;
  }

  /** Counts `text`, yielding to the event loop between pieces once a time slice is used up. */
  async count(text: string): Promise<number> {
    let total = 0;
    for (const n of this.pieces(text)) {
      total += n;
      if (performance.now() - this.sliceStart >= SLICE_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        this.sliceStart = performance.now();
      }
    }
    return total;
  }

  /** The same count without yielding, for small texts or code that cannot wait (bounded by the budget). */
  countSync(text: string): number {
    let total = 0;
    for (const n of this.pieces(text)) total += n;
    return total;
  }

  /** The count of each piece of `text` in turn; once the exact budget is spent, one estimate of the rest. */
  private *pieces(text: string): Generator<number> {
    let i = 0;
    while (i < text.length) {
      if (this.remaining <= 0) {
        yield this.estimate(text.slice(i));
        return;
      }
      const end = nextCut(text, i);
      yield this.countPiece(text.slice(i, end));
      i = end;
    }
  }

  private countPiece(piece: string): number {
    const tokens = this.encode(piece);
    this.remaining -= piece.length;
    this.countedTokens += tokens;
    this.countedBytes += Buffer.byteLength(piece);
    return tokens;
  }

  private estimate(rest: string): number {
    const measured = this.countedBytes > 0 ? this.countedTokens / this.countedBytes : 0;
    return Math.ceil(Buffer.byteLength(rest) * Math.max(measured, MIN_TOKENS_PER_BYTE));
  }
}

/** The end of the piece starting at `start`: see the module comment for where pieces may end. */
export function nextCut(text: string, start: number): number {
  const limit = start + MAX_PIECE_CHARS;
  if (limit >= text.length) return text.length;
  for (let p = limit; p > start + 1; p--) {
    const c = text.charCodeAt(p);
    if ((c === 0x20 || c === 0x09) && !isSpace(text.charCodeAt(p - 1))) return p;
  }
  // No exact split point: cut at the limit, but keep a surrogate pair together.
  const before = text.charCodeAt(limit - 1);
  return before >= 0xd800 && before <= 0xdbff ? limit - 1 : limit;
}

/** The characters JavaScript's `\s` matches (what the pre-tokenizers treat as whitespace). */
function isSpace(c: number): boolean {
  return (
    (c >= 0x09 && c <= 0x0d) ||
    c === 0x20 ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}
