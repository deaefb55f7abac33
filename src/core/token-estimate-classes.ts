/**
 * The costs and character classes of the token estimate (token-estimate.ts, whose module comment
 * describes them): what cl100k and o200k make of each kind of text, measured with gpt-tokenizer
 * (test/core/token-estimate*.test.ts).
 */

/** Per UTF-8 byte of a non-ASCII character that repeats a short unit (ЄЄЄ, aЇaЇ, " あ あ"): BPE merges almost none. */
export const REPEAT_PER_BYTE = 0.7;
/** A word that changes alphabet (Latin to Cyrillic or back) breaks every merge at the change. */
export const SCRIPT_SWITCH = 1;
/** Parts of one or two letters in a row (aAaA, random case): each about a token more than a part counts. */
export const SHORT_PART = 0.5;
/** A capital after a small letter in a word of non-ASCII letters (ÉcOle, ЖуК): the merges end there. */
export const INNER_CAPITAL = 0.6;
/** A pair of punctuation characters that is no token ("_;", "~^"): random punctuation in short runs. */
export const PUNCT_BREAK = 0.6;
/** Each punctuation character of a unit repeated (BPE merges units of punctuation no better than pairs). */
export const PUNCT_REPEAT = 0.5;

/** Tokens of one ASCII word part (between case changes); see the module comment of token-estimate.ts. */
export function asciiPart(letters: number, hasVowel: boolean, allCaps: boolean): number {
  const perToken = allCaps && letters >= 4 ? 4 : 8;
  let t = letters <= 12 ? Math.ceil(letters / perToken) : Math.ceil(12 / perToken) + Math.ceil((letters - 12) / 2.5);
  if (!hasVowel && letters >= 2) t++;
  return t;
}

/** Tokens per UTF-16 code unit of a non-ASCII character outside the word alphabets, by block start. */
export const NON_ASCII: readonly (readonly [start: number, cost: number])[] = [
  [0x80, 2], // C1 controls
  [0xa0, 1.5], // Latin-1 punctuation and symbols
  [0xc0, 1], // × and ÷ among the Latin-1 letters (the letters themselves are word letters)
  [0x180, 2], // Latin Extended-B, IPA, modifiers, combining marks
  [0x370, 2], // Greek symbols and archaic letters
  [0x386, 1.5], // Greek capitals: two tokens each in cl100k
  [0x3ac, 1], // Greek small letters
  [0x3cf, 2], // Coptic, Greek symbols
  [0x400, 1], // Cyrillic (basic letters are word letters)
  [0x460, 2], // Cyrillic historic and extended
  [0x530, 1.5], // Armenian
  [0x591, 2], // Hebrew points
  [0x5d0, 1.2], // Hebrew letters
  [0x5f0, 2],
  [0x621, 1], // Arabic letters
  [0x64b, 2], // Arabic marks and extended letters
  [0x700, 1.5], // Syriac, Thaana, NKo
  // Random text of a block that cl100k has no merges for costs three tokens a character (its UTF-8
  // bytes): 2.2 each. Of the others, about two.
  [0x800, 2.2], // Samaritan, Mandaic, Arabic extended
  [0x900, 1.5], // Devanagari, Bengali, Gurmukhi, Gujarati
  [0xb00, 2.2], // Oriya
  [0xb80, 1.5], // Tamil, Telugu, Kannada, Malayalam, Sinhala
  [0xe00, 1.25], // Thai
  [0xe80, 1.8], // Lao, Tibetan, Myanmar
  [0x10a0, 1.6], // Georgian
  [0x1100, 2.2], // Hangul Jamo, Ethiopic, Cherokee, Canadian syllabics, Ogham, Runic, Philippine scripts
  [0x1680, 3], // the Ogham space mark: whitespace no merge takes, a token a byte
  [0x1681, 2.2],
  [0x1780, 1.5], // Khmer
  [0x1800, 2.2], // Mongolian, Limbu, Tai, Balinese ... phonetic extensions, combining marks
  [0x1e00, 1], // Latin Extended Additional (word letters; this covers none)
  [0x1f00, 2], // Greek Extended
  [0x2000, 2], // spaces and zero-width characters
  [0x2010, 1], // dashes, quotes, bullets, ellipsis: single tokens in prose
  [0x2028, 2],
  [0x2030, 1.25], // per mille, primes, single guillemets
  [0x203b, 2],
  [0x2070, 2.5], // super/subscripts, currency, letterlike, arrows, math, box drawing, symbols, dingbats ...
  [0x3000, 1.4], // CJK punctuation
  [0x3040, 1.25], // kana
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

export function nonAsciiCost(c: number): number {
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

/** UTF-8 bytes of one UTF-16 code unit (a surrogate is half of a character of four). */
export function unitBytes(c: number): number {
  return c < 0x80 ? 1 : c < 0x800 || (c >= 0xd800 && c < 0xe000) ? 2 : 3;
}

/** The alphabet of a non-ASCII letter that BPE merges into words; None for any other character. */
export const enum Script {
  None,
  Latin,
  Cyrillic,
}

export function alphabetScript(c: number): Script {
  if (c <= 0x17f) return c >= 0xc0 && c !== 0xd7 && c !== 0xf7 ? Script.Latin : Script.None; // Latin-1 letters, Latin Extended-A
  if (c >= 0x400 && c <= 0x45f) return Script.Cyrillic;
  return c >= 0x1e00 && c <= 0x1eff ? Script.Latin : Script.None; // Latin Extended Additional (Vietnamese)
}

/** The surcharge of a word letter that follows another non-ASCII one (see token-estimate.ts). */
export function alphabetFollowCost(c: number): number {
  if (c <= 0xff) return 0.75; // Latin-1 letters
  if (c <= 0x17f) return 1.25; // Latin Extended-A
  if (c <= 0x45f) return 0; // basic Cyrillic: whole words of it are ordinary
  return 1.5; // Latin Extended Additional
}

/**
 * The surcharge of a word letter wherever it stands: letters that cl100k keeps as two tokens whatever
 * surrounds them (Ukrainian є ї, Serbian ђ ј љ њ ћ џ, the Latin Extended Additional letters that are
 * not Vietnamese, Vietnamese capitals), and Cyrillic and Latin-1 capitals inside a word (all-capital
 * words: one token or two a letter).
 */
export function letterCost(c: number, afterLetter: boolean): number {
  if (c >= 0x410 && c <= 0x44f) return afterLetter && c < 0x430 ? INNER_CAPITAL : 0;
  if (c < 0x100) return afterLetter && c < 0xdf ? INNER_CAPITAL : 0; // Latin-1 capitals (× is no letter)
  if (c >= 0x400 && c <= 0x45f) return c === 0x451 ? 0 : c === 0x456 ? 0.3 : 1; // ё and і are single tokens, і seldom merges
  if (c < 0x1e00) return 0;
  return c < 0x1ea0 || (c & 1) === 0 ? 1 : 0; // Vietnamese capitals are the even ones
}

/**
 * Whether a space before `c` standing alone (a one-character word) is a token of its own: before a
 * letter of most scripts BPE has no merge (" Ạ", " ő", " ש", " あ"); Latin-1, Cyrillic and the
 * punctuation and symbols that stand between words in prose (" —", " «", " €") merge with it or cost enough.
 */
export function aloneAfterSpace(c: number): boolean {
  if (c < 0x370) return c >= 0x100 && c < 0x180;
  if (c < 0x2000) return c < 0x400 || c > 0x45f;
  return c >= 0x3000;
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

export function alphabetVowel(c: number): boolean {
  if (c <= 0xff) return !latin1Consonant(c);
  if (c >= 0x400 && c <= 0x45f) return cyrillicVowel(c);
  return true; // Latin Extended-A and Additional: mostly accented vowels; not counted as consonants
}

/** ASCII punctuation, in code order: the index into PUNCT_PAIRS. */
const PUNCT = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
const PUNCT_INDEX = new Int8Array(128).fill(-1);
for (let j = 0; j < PUNCT.length; j++) PUNCT_INDEX[PUNCT.charCodeAt(j)] = j;

/**
 * For each punctuation character, the ones that make a single token with it after it in cl100k and
 * o200k alike (bit j: PUNCT[j]; test/core/token-estimate-shapes.test.ts checks the table against both).
 * About half of all pairs do, the common ones of code and prose ("),", "=>", "://", ");") among them.
 */
const PUNCT_PAIRS = new Uint32Array([
  0x01d4ebc3, 0x7ddbfffe, 0x1040ec0f, 0x1480e888, 0x02a539d3, 0x040009a4, 0x57dfffde, 0xbef3f7ff, 0x7fdfffff, 0x04ecfbaa, 0x01c4fdce,
  0x14e2ffff, 0x14cc7bfa, 0x3ff7ffff, 0x97fefffe, 0x1ff6fffe, 0x408379fa, 0x145e50e9, 0x5cfef2ff, 0x79fffbfe, 0x00dab9cb, 0x00e0008a,
  0x1fe0dade, 0x00c2f0ca, 0x73dffff2, 0x12c03080, 0x37c7fbda, 0x4981a900, 0x70a0d05a, 0x20801082, 0x7dfff9fa, 0x80045800,
]);

/** Whether BPE makes one token of the punctuation pair `a` `b`. */
export function punctPairMerges(a: number, b: number): boolean {
  return ((PUNCT_PAIRS[PUNCT_INDEX[a]!]! >>> PUNCT_INDEX[b]!) & 1) === 1;
}

/** Characters that BPE merges into long tokens when repeated (separator lines). */
export function separatorChar(c: number): boolean {
  return c === 0x2d || c === 0x3d || c === 0x23 || c === 0x2a || c === 0x5f || c === 0x2e || c === 0x2f || c === 0x2b || c === 0x7e || c === 0x25;
}

/** What the space that ends a whitespace run costs before `next` (it rides on a word or punctuation). */
export function spaceBefore(next: number): number {
  return (next >= 0x30 && next <= 0x39) || next < 0x20 || next === 0x7f ? 1 : 0;
}

/** What the tab that ends a whitespace run costs before `next` ("\treturn" is one token, "\taq" and "\t." two). */
export function tabBefore(next: number): number {
  const lower = next | 0x20;
  return lower >= 0x61 && lower <= 0x7a ? 0.5 : 1;
}

export function isAsciiLetter(c: number): boolean {
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x7a;
}

/** Whether the character after a non-ASCII one ends a word: not a letter or digit (NaN, the text's end, does). */
export function standsAlone(next: number): boolean {
  const lower = next | 0x20;
  return !(next >= 0x80 || (lower >= 0x61 && lower <= 0x7a) || (next >= 0x30 && next <= 0x39));
}

/**
 * Whether the text up to `c` at `i` repeats a unit of one to four characters (ЄЄЄЄ, aЇaЇ, eézÉeézÉ,
 * " あ あ"): BPE merges next to nothing in such a text, so each repetition costs about its bytes.
 */
export function repeats(text: string, i: number, c: number, before: number): boolean {
  if (i < 3) return false;
  if (text.charCodeAt(i - 2) === c && text.charCodeAt(i - 3) === before) return true;
  if (i < 5) return false;
  if (text.charCodeAt(i - 3) === c && text.charCodeAt(i - 4) === before && text.charCodeAt(i - 5) === text.charCodeAt(i - 2)) return true;
  return (
    i >= 7 &&
    text.charCodeAt(i - 4) === c &&
    text.charCodeAt(i - 5) === before &&
    text.charCodeAt(i - 6) === text.charCodeAt(i - 2) &&
    text.charCodeAt(i - 7) === text.charCodeAt(i - 3)
  );
}
