/**
 * A tokenizer-free estimate of a text's BPE token count (cl100k), for admission before a call whose
 * usage the vendor reports afterwards: TPM and the balance and budget holds rest on it until that usage
 * corrects them. Under-counting lets a request overshoot all three, so the estimate is shaped to stay
 * near or above the real count for text built to tokenize badly, and close to it for ordinary text. One
 * pass, nothing allocated per character, no vocabulary: a few dozen constants and a table of Unicode ranges.
 *
 * The text is walked in the shape of the cl100k pre-tokenizer (letters, digits in threes, punctuation,
 * whitespace) and each run is charged what BPE makes of it:
 *
 * - ASCII words: one token per 8 letters (common words are single tokens), split where the letter case
 *   changes (camelCase parts, and random mixed case, tokenize apart); all-capital parts one per 4
 *   letters; letters beyond the 12th of a part one per 2.5 (no real word is that long, random letters
 *   are); plus a token for a part without a vowel and 1.5 per consonant from the 4th in a row ('h'
 *   aside: th, ch, sh): English has few such clusters, strings of random letters many.
 * - Words with Latin-1 or Latin Extended letters, Vietnamese letters or basic Cyrillic: one token per
 *   2.5 letters, 1.5 per consonant from the 3rd in a row, and for accented Latin letters a surcharge
 *   for each one that follows another (real words seldom stack them; random text of them is ~1-2
 *   tokens a letter).
 * - Digits: groups of three, as the pre-tokenizer cuts them; a single space before digits is a token.
 * - Punctuation: one token for a run of up to 3, then one per 1.5 characters (random punctuation is
 *   ~0.65 tokens a character); a run of one repeated separator character (`-`, `=`, `#`, ...) one per 16.
 * - Whitespace: the single space before a word rides on it; the rest one per 8 characters, or one per
 *   four changes of character when that is more (BPE makes a token of each ' \n' pair); at the end
 *   of the text a whitespace run is a token of its own.
 * - Every other character by its Unicode block (NON_ASCII below): about what random text of that block
 *   costs, e.g. 1.75 for CJK ideographs and hangul, 1 for Greek, Hebrew or Arabic letters, 2.5 for
 *   symbols, and 4 for a character outside the BMP (its UTF-8 bytes: a token is never less than a byte).
 *
 * No run is charged more than its UTF-8 size, so the estimate never exceeds the text's UTF-8 size
 * (which bounds the real count too; embeddings/tokens.ts `needsExactCount` relies on it).
 *
 * Measured against cl100k (test/core/token-estimate.test.ts): English prose, docs and code within
 * +15% (slightly over); other scripts' prose between about -20% and +45% (over for CJK, hangul, Thai:
 * the price of not under-counting random text in them); random bytes, letters, digits, punctuation,
 * whitespace, emoji, symbols and random text of any script at no less than about 0.6 of the real
 * count, most at or above it. The shape it cannot see is made-up words built like real ones
 * (consonant-vowel syllables such as "bexoka lumari"), which count up to ~2.7x their estimate:
 * telling them from real words takes a vocabulary, i.e. the tokenizer tables this estimate avoids.
 */

const enum Kind {
  None,
  Word,
  Digits,
  Punct,
  Space,
}

/** Tokens per UTF-16 code unit of a non-ASCII character outside the word alphabets, by block start. */
const NON_ASCII: readonly (readonly [start: number, cost: number])[] = [
  [0x80, 2], // C1 controls
  [0xa0, 1.5], // Latin-1 punctuation and symbols
  [0xc0, 1], // × and ÷ among the Latin-1 letters (the letters themselves are word letters)
  [0x180, 2], // Latin Extended-B, IPA, modifiers, combining marks
  [0x370, 2], // Greek symbols and archaic letters
  [0x386, 1], // Greek letters
  [0x3cf, 2], // Coptic, Greek symbols
  [0x400, 1], // Cyrillic (basic letters are word letters)
  [0x460, 2], // Cyrillic historic and extended
  [0x530, 1.5], // Armenian
  [0x591, 2], // Hebrew points
  [0x5d0, 1.2], // Hebrew letters
  [0x5f0, 2],
  [0x621, 1], // Arabic letters
  [0x64b, 2], // Arabic marks and extended letters
  [0x700, 1.5], // Syriac, Thaana, NKo ...
  [0x800, 1.5], // Indic scripts, Sinhala
  [0xe00, 1.25], // Thai
  [0xe80, 1.5], // Lao, Tibetan, Myanmar, Georgian, Ethiopic ...
  [0x1e00, 1], // Latin Extended Additional (word letters; this covers none)
  [0x1f00, 2], // Greek Extended
  [0x2000, 2], // spaces and zero-width characters
  [0x2010, 1], // dashes, quotes, bullets, ellipsis: single tokens in prose
  [0x2028, 2],
  [0x2030, 1], // per mille, primes, guillemets
  [0x203b, 2],
  [0x2070, 2.5], // super/subscripts, currency, letterlike, arrows, math, box drawing, symbols, dingbats ...
  [0x3000, 1.25], // CJK punctuation, kana
  [0x3100, 2.5], // bopomofo, compatibility jamo, enclosed CJK, CJK Extension A
  [0x4e00, 1.75], // CJK ideographs
  [0xa000, 2.5], // Yi and others
  [0xac00, 1.75], // hangul syllables
  [0xd7b0, 2.5],
  [0xd800, 2], // surrogates: 4 for a character outside the BMP, its UTF-8 size
  [0xe000, 3], // private use
  [0xf900, 2.5], // compatibility ideographs, presentation forms, variation selectors ...
  [0xff00, 1.5], // full- and half-width forms
  [0xfff0, 2],
  [0xfffd, 1], // the replacement character (binary text decoded as UTF-8 is full of it)
  [0xfffe, 2],
];

function nonAsciiCost(c: number): number {
  if (c >= 0x4e00 && c < 0xa000) return 1.75; // the common case outside the alphabets: CJK ideographs
  let lo = 0;
  let hi = NON_ASCII.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (NON_ASCII[mid]![0] <= c) lo = mid;
    else hi = mid - 1;
  }
  return NON_ASCII[lo]![1];
}

/** Consonants among the Latin-1 letters (the rest are vowels for the cluster count). */
function latin1Consonant(c: number): boolean {
  // Ç Ð Ñ Þ ß ç ð ñ þ
  return c === 0xc7 || c === 0xd0 || c === 0xd1 || c === 0xde || c === 0xdf || c === 0xe7 || c === 0xf0 || c === 0xf1 || c === 0xfe;
}

/** Vowels of basic Cyrillic (Russian, Ukrainian, Belarusian), with the soft and hard signs. */
function cyrillicVowel(c: number): boolean {
  const l = c >= 0x410 && c <= 0x42f ? c + 0x20 : c >= 0x400 && c <= 0x40f ? c + 0x50 : c;
  // а е и о у ъ ы ь э ю я, ё є і ї ў
  return (
    l === 0x430 || l === 0x435 || l === 0x438 || l === 0x43e || l === 0x443 || (l >= 0x44a && l <= 0x44f) ||
    l === 0x451 || l === 0x454 || l === 0x456 || l === 0x457 || l === 0x45e
  );
}

/**
 * For a non-ASCII letter that BPE merges into words: the surcharge when it follows another such letter
 * (see the module comment); -1 for any other character.
 */
function alphabetFollowCost(c: number): number {
  if (c >= 0xc0 && c <= 0xff) return c === 0xd7 || c === 0xf7 ? -1 : 0.75; // Latin-1 letters
  if (c >= 0x100 && c <= 0x17f) return 1.25; // Latin Extended-A
  if (c >= 0x400 && c <= 0x45f) return 0; // basic Cyrillic: whole words of it are ordinary
  if (c >= 0x1e00 && c <= 0x1eff) return 1.5; // Latin Extended Additional (Vietnamese)
  return -1;
}

function alphabetVowel(c: number): boolean {
  if (c <= 0xff) return !latin1Consonant(c);
  if (c >= 0x400 && c <= 0x45f) return cyrillicVowel(c);
  return true; // Latin Extended-A and Additional: mostly accented vowels; not counted as consonants
}

/** Characters that BPE merges into long tokens when repeated (separator lines). */
function separatorChar(c: number): boolean {
  return c === 0x2d || c === 0x3d || c === 0x23 || c === 0x2a || c === 0x5f || c === 0x2e || c === 0x2f || c === 0x2b || c === 0x7e || c === 0x25;
}

/** Tokens of one ASCII word part (between case changes); see the module comment. */
function asciiPart(letters: number, hasVowel: boolean, allCaps: boolean): number {
  const perToken = allCaps && letters >= 4 ? 4 : 8;
  let t = letters <= 12 ? Math.ceil(letters / perToken) : Math.ceil(12 / perToken) + Math.ceil((letters - 12) / 2.5);
  if (!hasVowel && letters >= 2) t++;
  return t;
}

export function estimateTextTokens(text: string): number {
  return new Estimate().add(text);
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
  private prevAlphabet = false;
  // Whitespace and punctuation.
  private changes = 0;
  private prev = 0;
  private sameSeparator = false;

  add(text: string): number {
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      const lower = c | 0x20;
      if (lower >= 0x61 && lower <= 0x7a) this.asciiLetter(c, lower);
      else if (c < 0x80) this.ascii(c);
      else this.nonAscii(c);
    }
    this.close(true);
    return Math.ceil(this.tokens);
  }

  private asciiLetter(c: number, lower: number): void {
    if (this.kind !== Kind.Word) this.start(Kind.Word);
    const upper = c !== lower;
    // A case change starts a new part: camelCase humps, or the word after an acronym (HTTPServer).
    if (this.run > 0 && !this.alphabet && ((upper && !this.up1) || (!upper && this.up1 && this.up2))) {
      this.parts += asciiPart(this.part, this.partVowel, this.partCaps);
      this.part = 0;
      this.partVowel = false;
      this.partCaps = true;
    }
    if (lower === 0x61 || lower === 0x65 || lower === 0x69 || lower === 0x6f || lower === 0x75 || lower === 0x79) {
      this.partVowel = true;
      this.consonants = 0;
    } else if (lower !== 0x68 && ++this.consonants >= (this.alphabet ? 3 : 4)) this.extra += 1.5;
    if (!upper) this.partCaps = false;
    this.up2 = this.up1;
    this.up1 = upper;
    this.prevAlphabet = false;
    this.part++;
    this.bytes++;
    this.run++;
  }

  private ascii(c: number): void {
    let k: Kind;
    if (c >= 0x30 && c <= 0x39) k = Kind.Digits;
    else if (c === 0x20 || (c >= 0x09 && c <= 0x0d)) k = Kind.Space;
    else if (c < 0x20 || c === 0x7f) {
      this.start(Kind.None);
      this.tokens += 1; // control characters: a token each
      return;
    } else k = Kind.Punct;
    if (k !== this.kind) {
      // Digits take no space before them (letters and punctuation do).
      if (k === Kind.Digits && this.kind === Kind.Space && this.run === 1) this.tokens++;
      this.start(k);
      this.sameSeparator = k === Kind.Punct && separatorChar(c);
    } else if (k === Kind.Digits && this.run === 3) this.close(false);
    else if (k === Kind.Space && c !== this.prev) this.changes++;
    else if (k === Kind.Punct && c !== this.prev) this.sameSeparator = false;
    this.prev = c;
    this.run++;
  }

  private nonAscii(c: number): void {
    const follow = alphabetFollowCost(c);
    if (follow < 0) {
      this.start(Kind.None);
      this.tokens += nonAsciiCost(c);
      return;
    }
    if (this.kind !== Kind.Word) this.start(Kind.Word);
    this.alphabet = true;
    if (alphabetVowel(c)) this.consonants = 0;
    else if (++this.consonants >= 3) this.extra += 1.5;
    if (this.prevAlphabet) this.extra += follow;
    this.prevAlphabet = true;
    this.up1 = this.up2 = false;
    this.bytes += c < 0x800 ? 2 : 3;
    this.run++;
  }

  private start(kind: Kind): void {
    this.close(false);
    this.kind = kind;
  }

  /** Charges the current run; `atEnd`: nothing follows it (a final space is then a token of its own). */
  private close(atEnd: boolean): void {
    const run = this.run;
    if (run === 0) return;
    const kind = this.kind;
    if (kind === Kind.Word) {
      const word = (this.alphabet ? Math.ceil(run / 2.5) : this.parts + asciiPart(this.part, this.partVowel, this.partCaps)) + this.extra;
      // A token is at least a byte: surcharges never take a word past its UTF-8 size.
      this.tokens += Math.min(word, this.bytes);
    }
    else if (kind === Kind.Digits) this.tokens += Math.ceil(run / 3);
    else if (kind === Kind.Punct) this.tokens += this.sameSeparator ? Math.ceil(run / 16) : run <= 3 ? 1 : 1 + Math.ceil((run - 3) / 1.5);
    else if (kind === Kind.Space) this.tokens += Math.max(Math.ceil((atEnd ? run : run - 1) / 8), this.changes >> 2);
    this.run = this.part = this.bytes = this.parts = this.extra = this.consonants = this.changes = 0;
    this.alphabet = this.partVowel = this.up1 = this.up2 = this.prevAlphabet = false;
    this.partCaps = true;
  }
}
