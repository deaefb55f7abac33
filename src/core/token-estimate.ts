import { aloneAfterSpace, alphabetFollowCost, alphabetScript, alphabetVowel, asciiPart, isAsciiLetter, letterCost, nonAsciiCost } from './token-estimate-classes.js';
import { punctPairMerges, repeats, Script, separatorChar, spaceBefore, standsAlone, tabBefore, unitBytes } from './token-estimate-classes.js';
import { INNER_CAPITAL, PUNCT_BREAK, PUNCT_REPEAT, REPEAT_PER_BYTE, SCRIPT_SWITCH, SHORT_PART } from './token-estimate-classes.js';

/**
 * A tokenizer-free estimate of a text's BPE token count (cl100k), for admission before a call whose
 * usage the vendor reports afterwards: TPM and the balance and budget holds rest on it until that usage
 * corrects them. Under-counting lets a request overshoot all three, so the estimate is shaped to stay
 * near or above the real count for text built to tokenize badly, and close to it for ordinary text. One
 * pass, nothing allocated per character, no vocabulary: a few dozen constants and the character classes
 * of token-estimate-classes.ts.
 *
 * The text is walked in the shape of the cl100k pre-tokenizer (letters, digits in threes, punctuation,
 * whitespace) and each run is charged what BPE makes of it:
 *
 * - ASCII words: one token per 8 letters (common words are single tokens), split where the letter case
 *   changes (camelCase parts, and random mixed case, tokenize apart); all-capital parts one per 4
 *   letters; letters beyond the 12th of a part one per 2.5 (no real word is that long, random letters
 *   are); plus a token for a part without a vowel, 1.5 per consonant from the 4th in a row ('h' aside:
 *   th, ch, sh), and half a token for each part of one or two letters after another (aAaA).
 * - Words with Latin-1 or Latin Extended letters, Vietnamese letters or basic Cyrillic: one token per
 *   2.5 letters, 1.5 per consonant from the 3rd in a row, a surcharge for an accented Latin letter
 *   that follows another (real words seldom stack them), for a letter cl100k keeps as two tokens
 *   wherever it stands (Ukrainian є ї, Serbian ђ љ ...), for a Cyrillic capital inside a word, and a
 *   token for each change between Latin and Cyrillic letters (aаaа: no merge crosses it).
 * - Digits: groups of three, as the pre-tokenizer cuts them.
 * - Punctuation: one token for a run of up to 3, then one per 1.5 characters; but at least one plus
 *   0.6 per pair in it that is no token (about half of all pairs are); a run of one repeated separator
 *   character (`-`, `=`, `#`, ...) one per 16; a run that repeats the one before it after a space or
 *   two (" _; _;") half a token more per character.
 * - Whitespace: \v, \f and a \r not before \n a token each (BPE merges none of them); spaces, tabs and
 *   newlines one per 8, or one per two changes of character when that is more (" \n" pairs are
 *   tokens), and at least one for a run that holds a newline (the pre-tokenizer never joins one to a
 *   word), except the newlines right after punctuation (".\n" is one token). The space that ends a run
 *   rides on the word or punctuation after it (not on a digit or a control character); a tab rides
 *   half ("\treturn" is one token, "\tqx" two).
 * - Every other character by its Unicode block: about what random text of that block costs, e.g. 1.75
 *   for CJK ideographs and hangul, 1 for Greek small letters or Arabic letters, 2.5 for symbols, and 4
 *   for a character outside the BMP (its UTF-8 bytes: a token is never less than a byte); a token more
 *   for one standing alone between spaces (" ő ", " あ "), whose space BPE cannot merge with it.
 * - A non-ASCII character that repeats a unit of one to four characters (ЄЄЄ, aЇaЇ, " あ あ"): at
 *   least 0.7 per UTF-8 byte, as BPE merges next to none of them.
 *
 * The estimate never exceeds the text's UTF-8 size, which bounds the real count too
 * (embeddings/tokens.ts `needsExactCount` relies on it).
 *
 * Measured against cl100k and o200k (test/core/token-estimate*.test.ts): English prose, docs and code
 * within +15% (slightly over); other scripts' prose between about -20% and +45% of cl100k (over for
 * CJK, hangul, Thai: the price of not under-counting random text in them); random bytes, letters,
 * digits, punctuation, every kind of whitespace, emoji, symbols, random text of any script, mixes of
 * two scripts or classes and any unit of one to four characters repeated at no less than 0.6 of the
 * real count, most at or above it. The shape it cannot see is made-up words built like real ones
 * ("bexoka lumari", "Zzqe" over and over): up to about 3 times their estimate, as telling them from
 * real words takes a vocabulary, i.e. the tokenizer tables this estimate avoids.
 */

const enum Kind {
  None,
  Word,
  Digits,
  Punct,
  Space,
}

export function estimateTextTokens(text: string): number {
  return new Estimate(text).count();
}

/** The walk's state; a class rather than closure variables, which the engine keeps slower. */
class Estimate {
  private tokens = 0;
  private kind = Kind.None;
  /** Characters in the current run. */
  private run = 0;
  // A word: whether it holds non-ASCII word letters (counted per letter, not per part), its current
  // ASCII part, its UTF-8 size, the tokens of its finished parts, its surcharges, and the letters just before.
  private alphabet = false;
  private part = 0;
  private bytes = 0;
  private partVowel = false;
  private partCaps = true;
  private parts = 0;
  private extra = 0;
  private consonants = 0;
  private up1 = false;
  private up2 = false;
  private shortPart = false;
  // Punctuation.
  private prev = 0;
  private sameSeparator = false;
  /** Pairs in the run that BPE does not merge. */
  private breaks = 0;
  // The run's first character, where it starts, where the last one ended, and what it was (see close).
  private first = 0;
  private punctStart = 0;
  private punctEnd = -1;
  private afterSpace = false;
  private lastPunct = -1;
  // Whitespace: spaces, tabs and newlines; characters that are a token each; changes of character;
  // whether a newline is among them, or is still to be folded into the punctuation before the run.
  private soft = 0;
  private hard = 0;
  private changes = 0;
  private newline = false;
  private folding = false;
  private prevSpace = -1;

  constructor(private readonly text: string) {}

  count(): number {
    const text = this.text;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      const lower = c | 0x20;
      if (lower >= 0x61 && lower <= 0x7a) this.asciiLetter(c, lower);
      else if (c < 0x80) this.ascii(c, i);
      else this.nonAscii(c, i);
    }
    this.close(-1);
    const tokens = Math.ceil(this.tokens);
    // A token is at least a byte. The UTF-16 length is at most the UTF-8 size: past it, the size decides.
    return tokens <= text.length ? tokens : Math.min(tokens, Buffer.byteLength(text));
  }

  private asciiLetter(c: number, lower: number): void {
    if (this.kind !== Kind.Word) this.start(Kind.Word, c);
    const upper = c !== lower;
    // A case change starts a new part: camelCase humps, or the word after an acronym (HTTPServer).
    if (this.run > 0 && ((upper && !this.up1) || (!upper && this.up1 && this.up2))) {
      // A word with non-ASCII letters is counted by letter: a capital inside it costs a bit more.
      if (this.alphabet) {
        if (upper) this.extra += INNER_CAPITAL;
      } else {
        const short = this.part <= 2;
        if (short && this.shortPart) this.extra += SHORT_PART;
        this.shortPart = short;
        this.parts += asciiPart(this.part, this.partVowel, this.partCaps);
        this.part = 0;
        this.partVowel = false;
        this.partCaps = true;
      }
    }
    if (lower === 0x61 || lower === 0x65 || lower === 0x69 || lower === 0x6f || lower === 0x75 || lower === 0x79) {
      this.partVowel = true;
      this.consonants = 0;
    } else if (lower !== 0x68 && ++this.consonants >= (this.alphabet ? 3 : 4)) this.extra += 1.5;
    if (!upper) this.partCaps = false;
    this.up2 = this.up1;
    this.up1 = upper;
    this.part++;
    this.bytes++;
    this.run++;
  }

  private ascii(c: number, i: number): void {
    if (c === 0x20 || (c >= 0x09 && c <= 0x0d)) this.space(c, i);
    else if (c >= 0x30 && c <= 0x39) {
      if (this.kind !== Kind.Digits) this.start(Kind.Digits, c);
      else if (this.run === 3) this.close(c); // the pre-tokenizer cuts digits in threes
      this.run++;
    } else if (c < 0x20 || c === 0x7f) {
      this.start(Kind.None, c);
      this.tokens += 1; // control characters: a token each
    } else this.punct(c, i);
  }

  private punct(c: number, i: number): void {
    if (this.kind !== Kind.Punct) {
      // Whether only a space or two stands between this run and the previous one (" _; _;").
      const gap = i - this.punctEnd;
      this.afterSpace = this.kind === Kind.Space && this.run === gap && gap <= 2;
      this.start(Kind.Punct, c);
      this.sameSeparator = separatorChar(c);
      this.first = c;
      this.punctStart = i;
    } else if (c !== this.prev) {
      this.sameSeparator = false;
      if (!punctPairMerges(this.prev, c)) this.breaks++;
    }
    this.prev = c;
    this.run++;
  }

  private space(c: number, i: number): void {
    if (this.kind !== Kind.Space) {
      // The newlines right after punctuation are one token with it (".\n", "{\n", ";\r\n").
      this.folding = this.kind === Kind.Punct;
      this.start(Kind.Space, c);
    }
    this.run++;
    if (c === 0x20 || c === 0x09) {
      this.folding = false;
      this.soft++;
    } else if (c === 0x0a) {
      if (this.folding) return;
      this.soft++;
      this.newline = true;
    } else if (c === 0x0d && this.text.charCodeAt(i + 1) === 0x0a) {
      if (!this.folding) this.soft++; // "\r\n" is one token, as "\n" is
      return;
    } else {
      this.folding = false;
      this.hard++; // \v, \f, a \r on its own: BPE merges none of them
    }
    if (c !== this.prevSpace && this.prevSpace >= 0) this.changes++;
    this.prevSpace = c;
  }

  private nonAscii(c: number, i: number): void {
    const text = this.text;
    const before = i > 0 ? text.charCodeAt(i - 1) : -1;
    const periodic = repeats(text, i, c, before);
    // One character between spaces (" ő ", " あ "): the space before it is a token of its own.
    const alone = before === 0x20 && !periodic && standsAlone(text.charCodeAt(i + 1)) && aloneAfterSpace(c) ? 1 : 0;
    const script = alphabetScript(c);
    if (script === Script.None) {
      this.start(Kind.None, c);
      const cost = nonAsciiCost(c);
      // (The space before: a rider, charged nothing of its own.)
      this.tokens += periodic ? Math.max(cost, REPEAT_PER_BYTE * unitBytes(c)) + (before === 0x20 ? REPEAT_PER_BYTE : 0) : cost + alone;
      return;
    }
    if (this.kind !== Kind.Word) this.start(Kind.Word, c);
    this.extra += alone;
    this.alphabet = true;
    // The alphabet of the letter before in this word (an ASCII one is Latin).
    const after = this.run === 0 ? Script.None : before < 0x80 ? Script.Latin : alphabetScript(before);
    if (periodic) this.extra += REPEAT_PER_BYTE * (unitBytes(c) + (before < 0x80 ? 1 : 0));
    else {
      if (alphabetVowel(c)) this.consonants = 0;
      else if (++this.consonants >= 3) this.extra += 1.5;
      if (after !== Script.None && before >= 0x80) this.extra += alphabetFollowCost(c);
      this.extra += letterCost(c, after !== Script.None);
      // A change of alphabet; the one from Cyrillic back to an ASCII letter is seen here too.
      if (after !== Script.None && after !== script) this.extra += SCRIPT_SWITCH;
      if (script === Script.Cyrillic && isAsciiLetter(text.charCodeAt(i + 1))) this.extra += SCRIPT_SWITCH;
    }
    this.up1 = this.up2 = false;
    this.bytes += c < 0x800 ? 2 : 3;
    this.run++;
  }

  /** Closes the current run and starts one of `kind` with `c`. */
  private start(kind: Kind, c: number): void {
    this.close(c);
    this.kind = kind;
  }

  /** Charges the current run; `next`: the character after it, -1 at the end of the text. */
  private close(next: number): void {
    const run = this.run;
    if (run === 0) return;
    this.run = 0;
    const kind = this.kind;
    // Each kind resets its own state: a run boundary comes every few characters.
    if (kind === Kind.Word) {
      const word = (this.alphabet ? Math.ceil(run / 2.5) : this.parts + asciiPart(this.part, this.partVowel, this.partCaps)) + this.extra;
      // A token is at least a byte: surcharges never take a word past its UTF-8 size.
      this.tokens += Math.min(word, this.bytes);
      this.part = this.bytes = this.parts = this.extra = this.consonants = 0;
      this.alphabet = this.partVowel = this.up1 = this.up2 = this.shortPart = false;
      this.partCaps = true;
    } else if (kind === Kind.Digits) this.tokens += Math.ceil(run / 3);
    else if (kind === Kind.Punct) {
      let cost = this.sameSeparator ? Math.ceil(run / 16) : Math.max(run <= 3 ? 1 : 1 + Math.ceil((run - 3) / 1.5), 1 + PUNCT_BREAK * this.breaks);
      // The same run again after a space or two (" _; _;", ",\n';,\n';"): BPE merges such units no
      // better than random pairs. Runs are told apart by their ends and length.
      const key = this.first | (this.prev << 7) | (run << 14);
      if (this.afterSpace && key === this.lastPunct) cost = Math.min(cost + PUNCT_REPEAT * run, run);
      this.tokens += cost;
      this.lastPunct = key;
      this.punctEnd = this.punctStart + run;
      this.breaks = 0;
    } else if (kind === Kind.Space) {
      if (run === 1 && this.prevSpace === 0x20 && next >= 0) this.tokens += spaceBefore(next); // the usual space between words
      else {
        this.tokens += this.spaceRun(run, next);
        this.hard = this.changes = 0;
        this.newline = false;
      }
      this.soft = 0;
      this.prevSpace = -1;
    }
  }

  /** Tokens of a whitespace run; see the module comment. */
  private spaceRun(run: number, next: number): number {
    const last = this.prevSpace;
    // The space or tab that ends a run rides on what follows it (newlines never do).
    let rider = 0;
    let riderCost = 0;
    if (next >= 0 && (last === 0x20 || last === 0x09)) {
      rider = 1;
      riderCost = last === 0x20 ? spaceBefore(next) : tabBefore(next);
    }
    // Never more than a token a character (a run of \v and \f changes at every one).
    return Math.min(this.hard + riderCost + Math.max(Math.ceil((this.soft - rider) / 8), this.changes / 2, this.newline ? 1 : 0), run);
  }
}
