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

/**
 * A tokenizer-free estimate of a text's BPE token count, for admission before a call whose usage
 * the vendor reports afterwards. It walks the text once, in the shape of the cl100k/o200k
 * pre-tokenizer, and counts what BPE makes of each piece on average:
 *
 * - a run of ASCII letters (with the space or mark before it) is one token per 8 letters, rounded
 *   up: common English words are single tokens, long rare ones a few;
 * - a run of other letters (accented Latin, Cyrillic, Greek ...) is one token per 2.5 characters;
 * - CJK, kana and hangul characters are one token each;
 * - digits go in groups of up to three, as the pre-tokenizer cuts them;
 * - a run of punctuation or symbols is one token per two characters;
 * - whitespace beyond the single space that joins a word is one token per 8 characters of the run,
 *   rounded up: a paragraph break or an indent is one token, and a long run of mixed whitespace (which
 *   BPE splits into many tokens: ' \n' repeated is one token per pair) cannot pass for a single one.
 *
 * No tables, no allocation: measured within a few percent of cl100k on English prose and the test
 * texts (test/core/token-count.test.ts), and never used for a bill when the vendor reports usage.
 */
export function estimateTextTokens(text: string): number {
  let tokens = 0;
  let run = 0; // length of the current run
  let kind = 0; // 0 none, 1 ASCII letters, 2 other letters, 3 digits, 4 punctuation, 5 whitespace
  const close = (): void => {
    if (run === 0) return;
    if (kind === 1) tokens += Math.ceil(run / 8);
    else if (kind === 2) tokens += Math.ceil(run / 2.5);
    else if (kind === 3) tokens += Math.ceil(run / 3);
    else if (kind === 4) tokens += Math.ceil(run / 2);
    // Whitespace: one space before a word rides on that word; the rest is a token per 8 characters.
    else if (kind === 5 && run > 1) tokens += Math.ceil((run - 1) / 8);
    run = 0;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    let k: number;
    if ((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a)) k = 1;
    else if (c >= 0x30 && c <= 0x39) k = 3;
    else if (c === 0x20 || (c >= 0x09 && c <= 0x0d)) k = 5;
    else if (c < 0x80) k = 4;
    else if (c >= 0x2e80 && c <= 0xd7ff) {
      // CJK, kana, hangul: a token each, no run.
      close();
      tokens++;
      kind = 0;
      continue;
    } else if (c >= 0xd800 && c <= 0xdfff) k = 4;
    else k = 2;
    if (k === 2 && kind === 1) kind = 2; // a word with accents: count it at the denser rate
    else if (k === 1 && kind === 2) k = 2;
    if (k !== kind) {
      close();
      kind = k;
    }
    if (kind === 3 && run === 3) close();
    run++;
  }
  close();
  return tokens;
}
